/** Where the console sends a request without a session, and back to after signing in: console paths only, never another site. */
import { expect } from 'chai';
import { nextPath, signInPath } from '../../../services/api/console/session';

describe('console session paths', () => {
  it('goes back to a console path after sign-in, and to the overview for anything else', () => {
    expect(nextPath('/console/captures?page=2&config=abc')).to.equal('/console/captures?page=2&config=abc');
    expect(nextPath('/console/captures/job1')).to.equal('/console/captures/job1');
    expect(nextPath('/console')).to.equal('/console');
    for (const bad of ['https://evil.example/console', '//evil.example', '/console//evil.example', '/consolex', '/console/\\evil', '/docs', '', 7, undefined]) {
      expect(nextPath(bad), String(bad)).to.equal('/console');
    }
  });

  it('names the sign-in page with where to go back to', () => {
    expect(signInPath('/console')).to.equal('/console/sign-in');
    expect(signInPath('/console/captures?page=2')).to.equal('/console/sign-in?next=%2Fconsole%2Fcaptures%3Fpage%3D2');
    expect(signInPath('https://evil.example/')).to.equal('/console/sign-in');
  });
});
