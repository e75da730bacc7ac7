import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CatalogueError, knownLocation, loadCatalogue, locationNames, parseCatalogue, resolveLocation, routeOf } from '../../services/proxy/locations';

const FILE = {
  Berlin: { proxy: 'http://user-country-de-city-berlin-session-{session}:pw@127.0.0.1:7000' },
  Munich: { proxy: 'socks5://customer-u-cc-DE-city-munich-sessid-{session}:pw@127.0.0.1:7001' },
  Germany: { pick: ['Berlin', 'Munich'] },
  Europe: { pick: ['Germany'] },
  california: { proxy: 'https://u-state-us_california:pw@127.0.0.1:7002' },
};

describe('real-location catalogue (pure)', () => {
  const cat = parseCatalogue(FILE);

  it('lists every name, sorted without regard to case', () => {
    expect(locationNames(cat)).to.deep.equal(['Berlin', 'california', 'Europe', 'Germany', 'Munich']);
  });

  it('knows names without regard to case, in the catalogue spelling', () => {
    expect(knownLocation(cat, 'GERMANY')).to.equal('Germany');
    expect(knownLocation(cat, 'Atlantis')).to.equal(null);
  });

  it('resolves Random (any case) to one of every name, each over the draws; a name of the catalogue itself wins', () => {
    const seen = new Set<string | null>();
    for (let i = 0; i < 5; i++) seen.add(resolveLocation(cat, i % 2 ? 'RANDOM' : 'Random', () => i / 5));
    expect([...seen].sort()).to.deep.equal(['Berlin', 'Europe', 'Germany', 'Munich', 'california']);
    expect(resolveLocation(cat, 'germany')).to.equal('Germany');
    expect(resolveLocation(cat, 'Atlantis')).to.equal(null);
    expect(resolveLocation(parseCatalogue({}), 'Random')).to.equal(null);
    const own = parseCatalogue({ Random: { proxy: 'http://u:pw@127.0.0.1:7003' } });
    expect(resolveLocation(own, 'random', () => 0.99)).to.equal('Random');
  });

  it('routes a city to its proxy with a fresh session id in the template', () => {
    expect(routeOf(cat, 'berlin', 'a b')).to.deep.equal({
      upstream: 'http://user-country-de-city-berlin-session-a%20b:pw@127.0.0.1:7000',
      via: 'Berlin',
      target: null,
    });
    expect(routeOf(cat, 'Atlantis', 's')).to.equal(null);
  });

  it('a country picks one of its cities at random (each of them, over the draws), also through a region', () => {
    expect(routeOf(cat, 'Germany', 's1', () => 0)?.via).to.equal('Berlin');
    expect(routeOf(cat, 'Germany', 's1', () => 0.99)?.via).to.equal('Munich');
    const seen = new Set<string>();
    for (let i = 0; i < 64; i++) seen.add(routeOf(cat, 'Europe', String(i))?.via ?? '');
    expect([...seen].sort()).to.deep.equal(['Berlin', 'Munich']);
  });

  it('refuses broken catalogues naming the entry', () => {
    const bad: Array<[unknown, RegExp]> = [
      [[], /JSON object/],
      [{ X: { proxy: 'ftp://h:1' } }, /"X": proxy must be http/],
      [{ X: { proxy: 'http://h' } }, /host and a port/],
      [{ X: { proxy: 'not a url' } }, /"X": proxy is not a URL/],
      [{ X: { pick: ['Y'] } }, /"X" picks "Y", which is not in the file/],
      [{ X: { pick: ['Y'] }, Y: { pick: ['X'] } }, /circle/],
      [{ X: {} }, /"X" must be/],
      [{ X: { proxy: 'http://h:1' }, x: { proxy: 'http://h:2' } }, /listed twice/],
    ];
    for (const [raw, msg] of bad) expect(() => parseCatalogue(raw), JSON.stringify(raw)).to.throw(CatalogueError, msg);
  });

  it('loads a file; none configured is an empty catalogue; a broken file is an error naming it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'locations-'));
    try {
      const file = path.join(dir, 'locations.json');
      fs.writeFileSync(file, JSON.stringify(FILE));
      expect(locationNames(loadCatalogue({ file, preset: null }))).to.have.length(5);
      expect(locationNames(loadCatalogue({ file: null, preset: null }))).to.deep.equal([]);
      fs.writeFileSync(file, '{');
      expect(() => loadCatalogue({ file, preset: null })).to.throw(CatalogueError, /is not JSON/);
      expect(() => loadCatalogue({ file: path.join(dir, 'missing.json'), preset: null })).to.throw(CatalogueError, /cannot read/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
