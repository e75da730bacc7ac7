import { expect } from 'chai';
import {
  cookieDomainProblem,
  cookieNameProblem,
  cookiePathProblem,
  cookieValueProblem,
  headerNameProblem,
  headerValueProblem,
} from '../../services/shared/request-fields';

describe('request fields: the headers and cookies the browser takes', () => {
  it('takes HTTP tokens as header names, and refuses the headers the browser writes itself or user_agent sets', () => {
    for (const name of ['X-Debug', 'accept-language', 'Referer', "x!#$%&'*+.^_`|~"]) expect(headerNameProblem(name), name).to.equal(null);
    for (const name of ['X Bad', 'X:Y', 'Ünï', '']) expect(headerNameProblem(name), name).to.match(/is not a header name/);
    for (const name of ['Host', 'content-length', 'CONNECTION', 'Transfer-Encoding', 'TE', 'Proxy-Authorization', 'proxy-connection']) {
      expect(headerNameProblem(name), name).to.match(/written by the browser itself/);
    }
    expect(headerNameProblem('User-Agent')).to.match(/user_agent/);
  });

  it('takes a tab in a header value but no other control character', () => {
    expect(headerValueProblem('a\tb é')).to.equal(null);
    for (const value of ['a\r\nb', 'a\nb', 'a\u0000b', 'a\u007fb']) expect(headerValueProblem(value), JSON.stringify(value)).to.match(/control character/);
  });

  it("refuses in cookies what the browser refuses: '=' or ';' in a name, ';' in a value, control characters, spaces around", () => {
    expect(cookieNameProblem('session_id')).to.equal(null);
    expect(cookieNameProblem('a b')).to.equal(null);
    expect(cookieValueProblem('a b,"c"\\')).to.equal(null);
    expect(cookieValueProblem('')).to.equal(null);
    expect(cookieNameProblem('a=b')).to.match(/'='/);
    expect(cookieNameProblem('a;b')).to.match(/';'/);
    expect(cookieNameProblem('a\tb')).to.match(/control character/);
    expect(cookieNameProblem(' a')).to.match(/spaces around/);
    expect(cookieValueProblem('x;y')).to.match(/';'/);
    expect(cookieValueProblem('x\ty')).to.match(/control character/);
    expect(cookieValueProblem('x ')).to.match(/spaces around/);
  });

  it("takes a host name as a cookie's domain and a path from '/'", () => {
    for (const domain of ['example.com', '.example.com', '127.0.0.1', 'localhost', 'a_b.example.']) expect(cookieDomainProblem(domain), domain).to.equal(null);
    for (const domain of ['', '.', 'bad domain', 'a;b', 'é.example', 'a..b']) expect(cookieDomainProblem(domain), domain).to.match(/is not a host name/);
    expect(cookiePathProblem('/')).to.equal(null);
    expect(cookiePathProblem('/a/b')).to.equal(null);
    expect(cookiePathProblem('nopath')).to.match(/start with '\/'/);
    expect(cookiePathProblem('')).to.match(/start with '\/'/);
    expect(cookiePathProblem('/a;b')).to.match(/';'/);
  });
});
