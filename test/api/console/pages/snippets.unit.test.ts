import { expect } from 'chai';
import { pythonLiteral, shellQuote, snapSnippets } from '../../../../services/api/console/pages/snippets';

describe('console capture snippets', () => {
  const options = { url: "https://example.com/?q=it's", page_width: 800, dark_mode: true, hide_selectors: ['.a, .b'] };
  const s = snapSnippets('http://localhost:3000/', options);

  it('writes curl with every option, quoted for the shell, and the key from the environment', () => {
    expect(s.curl).to.contain("curl -G 'http://localhost:3000/snap'");
    expect(s.curl).to.contain(`--data-urlencode 'url=https://example.com/?q=it'\\''s'`);
    expect(s.curl).to.contain("--data-urlencode 'page_width=800'");
    expect(s.curl).to.contain(`--data-urlencode 'hide_selectors=[".a, .b"]'`);
    expect(s.curl).to.contain('$PAGEPIXELS_API_KEY');
    expect(shellQuote("a'b")).to.equal(`'a'\\''b'`);
  });

  it("writes the npm and Python clients' snap call, and the MCP tool's name and arguments", () => {
    expect(s.npm).to.contain("require('screenshots-pagepixels')");
    expect(s.npm).to.contain('client.snap({');
    expect(s.npm).to.contain('"page_width": 800');
    expect(s.python).to.contain('client.snap({');
    expect(s.python).to.contain('"dark_mode": True,');
    expect(JSON.parse(s.mcp)).to.deep.equal({ name: 'snap', arguments: options });
    expect(pythonLiteral({ a: null, b: [false, 'x'] })).to.equal('{\n    "a": None,\n    "b": [False, "x"],\n}');
  });
});
