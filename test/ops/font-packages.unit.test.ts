/**
 * The font packages are written once, as FONT_PACKAGES in scripts/ensure-system-deps.js (what
 * `npm start`, `npm test` and the benchmark install on this machine), and every other place that
 * names them names the same ones: each image that runs a browser (grid/Dockerfile.node; the
 * service's own image runs none, captures run on the Chrome nodes), and the table of
 * docs/operations.md, "Fonts for every script". No other doc names a font package the list lacks.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import YAML from 'yaml';
import { allCodeSpans, codeSpans, parse, projectDocs, tables } from '../docs/markdown';

const ROOT = path.resolve(__dirname, '..', '..', '..');

const { FONT_PACKAGES } = require(path.join(ROOT, 'scripts', 'ensure-system-deps.js')) as {
  FONT_PACKAGES: Array<{ pkg: string; file: string; covers: string; patterns: string[] }>;
};
const FONTS = FONT_PACKAGES.map((f) => f.pkg);

/** Packages that put a browser in an image. */
const BROWSERS = ['chromium', 'chromium-headless-shell', 'chromium-driver', 'google-chrome-stable', 'firefox-esr'];
/** A font package, or fontconfig, by name. */
const isFontPackage = (pkg: string) => pkg === 'fontconfig' || pkg.startsWith('fonts-') || pkg.startsWith('ttf-');

/** Each build stage of a Dockerfile (from its FROM) with the packages its `apt-get install` commands name. */
function aptPackagesByStage(dockerfile: string): Array<{ from: string; packages: string[] }> {
  // Comment lines go first (Docker drops them, even inside a continued RUN), then continuations join.
  const text = dockerfile
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ');
  const stages: Array<{ from: string; packages: string[] }> = [];
  for (const line of text.split('\n')) {
    const from = /^\s*FROM\s+(\S+)/i.exec(line);
    if (from) stages.push({ from: from[1] as string, packages: [] });
    if (!/^\s*RUN\s/i.test(line)) continue;
    for (const command of line.split(/&&|;|\|\|/)) {
      const words = command.trim().split(/\s+/);
      const at = words.findIndex((w, i) => /^apt(-get)?$/.test(w) && words[i + 1] === 'install');
      if (at === -1) continue;
      stages.at(-1)?.packages.push(...words.slice(at + 2).filter((w) => !w.startsWith('-')));
    }
  }
  return stages;
}

/** Every Dockerfile of the repository (Dockerfile, Dockerfile.*, *.Dockerfile), outside node_modules and dist. */
function dockerfiles(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!['node_modules', 'dist', 'data', '.git'].includes(entry.name)) walk(rel);
      } else if (/^Dockerfile(\..+)?$|\.Dockerfile$/.test(entry.name)) found.push(rel);
    }
  };
  walk('.');
  return found.sort();
}

describe('font packages: one list (FONT_PACKAGES of scripts/ensure-system-deps.js), the same everywhere', () => {
  it('the list: Debian packages, each once, each with a file the fast path stats and what it covers', () => {
    expect(FONTS).to.include.members(['fonts-noto-cjk', 'fonts-noto-core', 'fonts-noto-color-emoji', 'fonts-liberation', 'fontconfig']);
    expect(new Set(FONTS).size, 'a package listed twice').to.equal(FONTS.length);
    for (const font of FONT_PACKAGES) {
      expect(font.pkg, 'a Debian package name').to.match(/^[a-z0-9][a-z0-9.+-]+$/);
      expect(path.isAbsolute(font.file), `${font.pkg}: ${font.file}`).to.equal(true);
      expect(font.covers, font.pkg).to.be.a('string').and.not.equal('');
      for (const pattern of font.patterns) expect(pattern, font.pkg).to.match(/^:/);
    }
  });

  it('reads the apt-get install lines of a Dockerfile, stage by stage, continuations and comments included', () => {
    const stages = aptPackagesByStage(
      [
        'FROM node:20 AS build',
        'RUN apt-get update && apt-get install -y --no-install-recommends python3 make && rm -rf /var/lib/apt/lists/*',
        'FROM debian:bookworm-slim',
        'RUN apt-get update \\',
        ' && apt-get install -y --no-install-recommends chromium curl \\',
        '# a comment in the middle',
        '      fontconfig fonts-a \\',
        ' && useradd x',
      ].join('\n'),
    );
    expect(stages).to.deep.equal([
      { from: 'node:20', packages: ['python3', 'make'] },
      { from: 'debian:bookworm-slim', packages: ['chromium', 'curl', 'fontconfig', 'fonts-a'] },
    ]);
  });

  const images = dockerfiles().map((file) => ({ file, stages: aptPackagesByStage(fs.readFileSync(path.join(ROOT, file), 'utf8')) }));

  it('finds the images: the service (Dockerfile) and the Chrome node (grid/Dockerfile.node)', () => {
    expect(images.map((i) => i.file)).to.include.members(['Dockerfile', path.join('grid', 'Dockerfile.node')]);
  });

  for (const { file, stages } of images) {
    const last = stages.at(-1) ?? { from: '', packages: [] };
    const browser = last.packages.filter((p) => BROWSERS.includes(p));
    it(`${file}: ${browser.length ? 'runs a browser, so it installs exactly the font packages of the list' : 'runs no browser and installs no font package'}`, () => {
      const fonts = last.packages.filter(isFontPackage);
      if (browser.length) expect(fonts.sort(), `${file}: the font packages its image installs`).to.deep.equal([...FONTS].sort());
      else expect(fonts, `${file}: font packages in an image without a browser`).to.deep.equal([]);
    });
  }

  it('the Chrome nodes are that image: grid/Dockerfile.node installs a browser, the service image none', () => {
    const browserImages = images.filter((i) => (i.stages.at(-1)?.packages ?? []).some((p) => BROWSERS.includes(p))).map((i) => i.file);
    expect(browserImages).to.deep.equal([path.join('grid', 'Dockerfile.node')]);
  });

  it("docker-compose.yml: every browser runs in an image built from a Dockerfile of this repository (none from someone else's)", () => {
    const compose = YAML.parse(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
      services: Record<string, { image?: string; build?: string | { context?: string; dockerfile?: string } }>;
    };
    const chrome = compose.services.chrome;
    expect(chrome?.build, 'the chrome service is built here').to.deep.include({ dockerfile: 'grid/Dockerfile.node' });
    for (const [name, svc] of Object.entries(compose.services)) {
      if (svc.build) continue;
      expect(svc.image ?? '', `${name} runs a browser image not built here`).not.to.match(/chrome|chromium|firefox|standalone|selenium\/node/i);
    }
  });

  it('deploy/kubernetes: the Chrome node containers run the image of grid/Dockerfile.node, no other browser image', () => {
    const images = fs
      .readdirSync(path.join(ROOT, 'deploy', 'kubernetes'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.yaml'))
      .flatMap((f) => [...fs.readFileSync(path.join(ROOT, 'deploy', 'kubernetes', f), 'utf8').matchAll(/^\s*image:\s*(\S+)/gm)].map((m) => m[1] as string));
    const browsers = images.filter((i) => /chrome|chromium|firefox|standalone|selenium\/node/i.test(i));
    expect(browsers, 'browser images in deploy/kubernetes').not.to.be.empty;
    expect([...new Set(browsers.map((i) => i.split(':')[0]))], 'built from grid/Dockerfile.node').to.deep.equal(['snapservice-chrome-node']);
  });

  it('docs/operations.md, "Fonts for every script": its table lists the same packages, in the same order', () => {
    const text = fs.readFileSync(path.join(ROOT, 'docs', 'operations.md'), 'utf8');
    const start = text.indexOf('\n## Fonts for every script\n');
    expect(start, 'the section').to.be.greaterThan(-1);
    const end = text.indexOf('\n## ', start + 1);
    const table = tables(text.slice(start, end === -1 ? undefined : end)).find((t) => t.header[0] === 'Package');
    expect(table, 'a table whose first column is "Package"').to.exist;
    const listed = (table?.rows ?? []).map((row) => codeSpans(row[0] ?? [])[0]);
    expect(listed).to.deep.equal(FONTS);
  });

  it('no doc and no Dockerfile names a font package the list lacks (the decision records name the ones rejected)', () => {
    const named = new Map<string, string>();
    for (const file of projectDocs().filter((f) => !f.startsWith(path.join('docs', 'decisions')))) {
      const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
      const fences = parse(text)
        .filter((t) => t.type === 'fence')
        .map((t) => t.content);
      for (const span of [...allCodeSpans(text), ...fences]) {
        for (const m of span.matchAll(/\b(fonts-[a-z0-9.+-]*[a-z0-9])/g)) named.set(m[1] as string, file);
      }
    }
    for (const { file, stages } of images) for (const s of stages) for (const p of s.packages.filter(isFontPackage)) named.set(p, file);
    const stray = [...named].filter(([pkg]) => !FONTS.includes(pkg)).map(([pkg, file]) => `${pkg} (${file})`);
    expect(stray, 'font packages named outside the list').to.deep.equal([]);
  });
});
