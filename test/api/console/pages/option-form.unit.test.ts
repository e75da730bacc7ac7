import { expect } from 'chai';
import { formOptions, groupedOptions, optionFields } from '../../../../services/api/console/pages/option-form';
import { shapeOptions } from '../../../../services/api/request-schemas';

describe('console option form', () => {
  it('has every option of the shape once, in a group, from the option table', () => {
    for (const shape of ['snap', 'configCreate'] as const) {
      const grouped = groupedOptions(shape).flatMap((g) => g.options.map((o) => o.name));
      expect(grouped.slice().sort()).to.deep.equal(
        shapeOptions(shape)
          .map((o) => o.name)
          .sort(),
      );
    }
    expect(groupedOptions('snap')[0]?.options.map((o) => o.name)).to.include('url');
    expect(
      groupedOptions('configCreate')
        .find((g) => g.id === 'schedule')
        ?.options.map((o) => o.name),
    ).to.include('scheduled_interval');
  });

  it('fits each input to its schema, shows the default, and the note beside the field it is about, escaped', () => {
    const out = optionFields('snap', { page_width: '50', custom_title: '<b>"x"</b>' }, { param: 'page_width', note: 'page_width: <must> be >= 100' }).text;
    expect(out).to.match(/<input id="o-page_width" name="page_width" type="number"[^>]* min="100" max="7680" value="50"[^>]*aria-invalid="true">/);
    expect(out).to.contain('<p class="notice error field-note" id="e-page_width" role="alert">page_width: &lt;must&gt; be &gt;= 100</p>');
    expect(out).to.contain('value="&lt;b&gt;&quot;x&quot;&lt;/b&gt;"');
    expect(out).to.match(/<select id="o-image_format" name="image_format"[^>]*>\s*<option value="">\(default: jpeg\)<\/option>/);
    expect(out).to.match(/<select id="o-dark_mode" name="dark_mode"/);
    expect(out).to.match(/<textarea id="o-headers" name="headers"/);
  });

  it('reads the form without its token, the last of a repeated field', () => {
    expect(formOptions({ _csrf: 't', url: 'https://a.example', wait: ['1', '2'] })).to.deep.equal({ url: 'https://a.example', wait: '2' });
  });
});
