/** The console's headers, cookies and the check of every POST (the token in its form, the Origin header). */
import { expect } from 'chai';
import type { FastifyRequest } from 'fastify';
import { contentSecurityPolicy, cookie, cookiesOf, postRefusal, securityHeaders } from '../../../services/api/console/security';

const request = (o: { origin?: string; body?: unknown; protocol?: string; host?: string }) =>
  ({
    headers: o.origin === undefined ? {} : { origin: o.origin },
    body: o.body,
    protocol: o.protocol ?? 'http',
    host: o.host ?? '127.0.0.1:3000',
  }) as unknown as FastifyRequest;

describe('console security', () => {
  it('sends a CSP that runs scripts and styles from this origin only (none inline), refuses frames, and lets images come from the CDN', () => {
    const csp = contentSecurityPolicy(['http://localhost:3000', 'https://cdn.example', 'http://localhost:3000']);
    const directives = Object.fromEntries(csp.split('; ').map((d) => [d.split(' ')[0], d.split(' ').slice(1).join(' ')]));
    expect(directives).to.deep.equal({
      'default-src': "'none'",
      'script-src': "'self'",
      'style-src': "'self'",
      'img-src': "'self' data: http://localhost:3000 https://cdn.example",
      'connect-src': "'self'",
      'form-action': "'self'",
      'base-uri': "'none'",
      'frame-ancestors': "'none'",
    });
    expect(csp).not.to.contain('unsafe');
    expect(securityHeaders([])).to.include({ 'x-content-type-options': 'nosniff', 'x-frame-options': 'DENY', 'referrer-policy': 'same-origin' });
  });

  it('writes cookies HttpOnly, SameSite=Lax, on /console only, Secure over TLS, and deletes with Max-Age=0', () => {
    expect(cookie('console_session', 'a b', { secure: false, maxAgeSeconds: 60 })).to.equal(
      'console_session=a%20b; Path=/console; HttpOnly; SameSite=Lax; Max-Age=60',
    );
    expect(cookie('console_session', 'x', { secure: true, maxAgeSeconds: 0 })).to.equal(
      'console_session=x; Path=/console; HttpOnly; SameSite=Lax; Max-Age=0; Secure',
    );
  });

  it('reads the cookies a request sent (the first of a repeated name)', () => {
    expect(cookiesOf('a=1; console_session=abc%2Fd; a=2; junk; =x')).to.deep.equal({ a: '1', console_session: 'abc/d' });
    expect(cookiesOf(undefined)).to.deep.equal({});
    expect(cookiesOf('bad=%E0%A4%A')).to.deep.equal({ bad: '%E0%A4%A' });
  });

  it('lets a POST through with its token and this site as its Origin (or none), and refuses it otherwise', () => {
    const token = 'T'.repeat(32);
    expect(postRefusal(request({ body: { _csrf: token } }), token)).to.equal(null);
    expect(postRefusal(request({ origin: 'http://127.0.0.1:3000', body: { _csrf: token } }), token)).to.equal(null);
    expect(postRefusal(request({ origin: 'https://console.example', protocol: 'https', host: 'console.example', body: { _csrf: token } }), token)).to.equal(
      null,
    );
    expect(postRefusal(request({ origin: 'http://evil.example', body: { _csrf: token } }), token)).to.contain('another site');
    expect(postRefusal(request({ origin: 'null', body: { _csrf: token } }), token)).to.contain('another site');
    expect(postRefusal(request({ body: {} }), token)).to.contain('security token');
    expect(postRefusal(request({ body: undefined }), token)).to.contain('security token');
    expect(postRefusal(request({ body: { _csrf: `${token}x` } }), token)).to.contain('security token');
    expect(postRefusal(request({ body: { _csrf: [token] } }), token)).to.contain('security token');
    expect(postRefusal(request({ body: { _csrf: '' } }), '')).to.contain('security token');
    expect(postRefusal(request({ body: { _csrf: token } }), undefined)).to.contain('security token');
  });
});
