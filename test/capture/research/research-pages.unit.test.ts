/** Which linked pages domain research reads besides a site's home page (pure). */
import { expect } from 'chai';
import { fieldTerms, pickPages, siteOf } from '../../../services/capture/research/research-pages';

const fields = [
  { data_field_name: 'founded_year', data_field_prompt_description: 'The year the company was founded' },
  { data_field_name: 'pricing_plans', data_field_prompt_description: 'Names of its pricing plans' },
];
const link = (href: string, text = '') => ({ href, text });

describe('research: the pages read besides the home page', () => {
  const home = 'https://www.alpha.example/';
  const terms = fieldTerms(fields);

  it('takes the pages of the same site whose address or text names the fields, or that hold facts on most sites', () => {
    const links = [
      link('https://www.alpha.example/blog/2024/01/launch', 'Our launch'),
      link('https://www.alpha.example/login', 'Log in'),
      link('https://www.alpha.example/legal/privacy', 'Privacy'),
      link('https://www.alpha.example/pricing', 'Plans & pricing'),
      link('https://www.alpha.example/about', 'About us'),
      link('https://other.example/about', 'A partner'),
    ];
    expect(pickPages(home, links, terms, 2)).to.deep.equal(['https://www.alpha.example/pricing', 'https://www.alpha.example/about']);
  });

  it('never reads the home page again, a page twice, a file, a sign-in or legal page, or another site', () => {
    const links = [
      link('https://www.alpha.example/#top', 'Home'),
      link('https://www.alpha.example/', 'Home'),
      link('https://www.alpha.example/about#team', 'Team'),
      link('https://www.alpha.example/about/', 'About'),
      link('https://www.alpha.example/pricing.pdf', 'Pricing (PDF)'),
      link('https://www.alpha.example/account/sign-up', 'Pricing: sign up'),
      link('https://www.alpha.example/terms', 'Company terms'),
      link('mailto:hello@alpha.example', 'Contact'),
      link('https://alpha.example.evil.test/about', 'About'),
    ];
    expect(pickPages(home, links, terms, 5)).to.deep.equal(['https://www.alpha.example/about']);
  });

  it('counts a site by its registrable domain and port: www and a subdomain are one site', () => {
    expect(siteOf(new URL('https://www.example.co.uk/'))).to.equal(siteOf(new URL('https://shop.example.co.uk/x')));
    expect(siteOf(new URL('http://alpha.test:8080/'))).not.to.equal(siteOf(new URL('http://alpha.test:9090/')));
    expect(siteOf(new URL('http://127.0.0.1:8080/'))).to.equal('127.0.0.1:8080');
  });

  it('reads the words of the fields, less the common ones, and matches their forms (price, pricing)', () => {
    expect([...terms]).to.include.members(['founded', 'year', 'company', 'pricing', 'plans']);
    expect([...terms]).not.to.include('the');
    const links = [link('https://www.alpha.example/prices', 'Prices'), link('https://www.alpha.example/history', 'Founders')];
    expect(pickPages(home, links, terms, 2)).to.deep.equal(['https://www.alpha.example/prices', 'https://www.alpha.example/history']);
  });

  it('takes nothing when no link scores', () => {
    expect(pickPages(home, [link('https://www.alpha.example/blog/a/b/c', 'A story')], terms, 2)).to.deep.equal([]);
  });
});
