/**
 * The canonical query and signature of signed links (billing/public/signed-links.ts), against
 * a vector computed with Python's hmac and urllib.parse.quote (the docs' Python example), so
 * what docs/api.md tells users to do is what the server checks.
 */
import { expect } from 'chai';
import { canonicalQuery, linkSignature, newLinkSecret, queryPairs, rfc3986, signatureMatches } from '../../../services/billing/public/signed-links';

/** Computed with: sorted((quote(k, safe='-_.~'), v)) … hmac.new(b"lsk_test-secret", canonical.encode(), hashlib.sha256).hexdigest() */
const PYTHON_CANONICAL =
  'account=acct_abc&css=p%7Bcolor%3Ared%7D%2A%21%27%28%29&expires=1900000000&page_width=800&url=https%3A%2F%2Fexample.com%2Fa%20b%3Fx%3D1%26y%3D%C3%BC';
const PYTHON_SIGNATURE = '6a966260f75791c38fb692af05bf752f51361a8ece9baf24c25f06bb2a274b6f';
const PAIRS: Array<[string, string]> = [
  ['url', 'https://example.com/a b?x=1&y=ü'],
  ['page_width', '800'],
  ['account', 'acct_abc'],
  ['expires', '1900000000'],
  ['css', "p{color:red}*!'()"],
];

describe('signed links: canonical query and signature', () => {
  it("encodes per RFC 3986: only unreserved characters stay, !'()* included in what is escaped", () => {
    expect(rfc3986("a-b_c.d~e !'()*/?&=+ü")).to.equal('a-b_c.d~e%20%21%27%28%29%2A%2F%3F%26%3D%2B%C3%BC');
  });

  it('sorts by name, encodes names and values, leaves signature out: the same text Python makes', () => {
    expect(canonicalQuery(PAIRS)).to.equal(PYTHON_CANONICAL);
    expect(canonicalQuery([...PAIRS, ['signature', 'abc']])).to.equal(PYTHON_CANONICAL);
  });

  it('gives one canonical form to every spelling of one query (order, + or %20, escaped or not)', () => {
    const a = queryPairs('?url=https%3A%2F%2Fexample.com%2Fa+b&page_width=800&account=acct_abc');
    const b = queryPairs('account=acct_abc&page_width=800&url=https://example.com/a%20b&signature=00');
    expect(canonicalQuery(a)).to.equal(canonicalQuery(b));
    expect(canonicalQuery(a)).to.equal('account=acct_abc&page_width=800&url=https%3A%2F%2Fexample.com%2Fa%20b');
  });

  it('signs with HMAC-SHA256 as hex, as Python computes it', () => {
    expect(linkSignature('lsk_test-secret', PYTHON_CANONICAL)).to.equal(PYTHON_SIGNATURE);
  });

  it('accepts the right signature (either case) and refuses a wrong one, another secret, a tampered query, or a short one', () => {
    expect(signatureMatches('lsk_test-secret', PYTHON_CANONICAL, PYTHON_SIGNATURE)).to.equal(true);
    expect(signatureMatches('lsk_test-secret', PYTHON_CANONICAL, PYTHON_SIGNATURE.toUpperCase())).to.equal(true);
    expect(signatureMatches('lsk_other', PYTHON_CANONICAL, PYTHON_SIGNATURE)).to.equal(false);
    expect(signatureMatches('lsk_test-secret', PYTHON_CANONICAL.replace('800', '801'), PYTHON_SIGNATURE)).to.equal(false);
    expect(signatureMatches('lsk_test-secret', PYTHON_CANONICAL, `${PYTHON_SIGNATURE.slice(0, -1)}0`)).to.equal(false);
    expect(signatureMatches('lsk_test-secret', PYTHON_CANONICAL, PYTHON_SIGNATURE.slice(0, 32))).to.equal(false);
    expect(signatureMatches('lsk_test-secret', PYTHON_CANONICAL, '')).to.equal(false);
  });

  it('makes a new random lsk_ secret each time', () => {
    const a = newLinkSecret();
    expect(a).to.match(/^lsk_[A-Za-z0-9_-]{43}$/);
    expect(newLinkSecret()).not.to.equal(a);
  });
});
