/** fail_on_status's list: codes, ranges and classes read, everything else refused with what is wrong. */
import { expect } from 'chai';
import { parseStatusCodes, statusCodesProblem, statusMatches } from '../../services/shared/status-codes';

const ranges = (text: string) => {
  const read = parseStatusCodes(text);
  if ('problem' in read) throw new Error(read.problem);
  return read.ranges;
};

describe('fail_on_status lists (status-codes.ts)', () => {
  it('reads codes, ranges and classes, spaces and either case', () => {
    expect(ranges('404')).to.deep.equal([[404, 404]]);
    expect(ranges('404,500-599')).to.deep.equal([
      [404, 404],
      [500, 599],
    ]);
    expect(ranges(' 4xx , 5XX ')).to.deep.equal([
      [400, 499],
      [500, 599],
    ]);
    expect(ranges('500 - 503')).to.deep.equal([[500, 503]]);
    expect(ranges('301,1xx')).to.deep.equal([
      [301, 301],
      [100, 199],
    ]);
  });

  it('matches a status inside any range and nothing outside', () => {
    const list = ranges('404,500-503');
    expect([403, 404, 405, 499, 500, 503, 504].map((s) => statusMatches(list, s))).to.deep.equal([false, true, false, false, true, true, false]);
    expect(statusMatches(ranges('4xx'), 400)).to.equal(true);
    expect(statusMatches(ranges('4xx'), 399)).to.equal(false);
  });

  it('refuses other spellings, saying what is wrong', () => {
    expect(statusCodesProblem('')).to.contain('empty entry');
    expect(statusCodesProblem('404,')).to.contain('empty entry');
    expect(statusCodesProblem('404,,500')).to.contain('empty entry');
    expect(statusCodesProblem('abc')).to.equal('"abc" is not a status code, a range of them or a class');
    expect(statusCodesProblem('40x')).to.contain('"40x" is not a status code');
    expect(statusCodesProblem('6xx')).to.contain('"6xx" is not a status code');
    expect(statusCodesProblem('4xx;5xx')).to.contain('"4xx;5xx"');
    expect(statusCodesProblem('4040')).to.contain('"4040"');
    expect(statusCodesProblem('600')).to.equal('"600" is not an HTTP status (100 to 599)');
    expect(statusCodesProblem('099')).to.contain('not an HTTP status');
    expect(statusCodesProblem('500-600')).to.equal('"500-600": 600 is not an HTTP status (100 to 599)');
    expect(statusCodesProblem('099-200')).to.equal('"099-200": 099 is not an HTTP status (100 to 599)');
    expect(statusCodesProblem(',')).to.equal('"," has an empty entry; separate the entries with single commas');
    expect(statusCodesProblem('599-500')).to.contain('"599-500" is an empty range');
    expect(statusCodesProblem('404,500-599')).to.equal(null);
  });
});
