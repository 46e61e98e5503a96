import { describe, expect, it } from 'vitest';
import { codeOf, escapeHTML, renderMarkdown } from '../../src/lib/markdown';

function dom(html: string): HTMLElement {
  const d = document.createElement('div');
  d.innerHTML = html;
  return d;
}

describe('renderMarkdown', () => {
  it('renders emphasis, lists and inline code', () => {
    const d = dom(renderMarkdown('**bold** and `x := 1`\n\n- a\n- b'));
    expect(d.querySelector('strong')?.textContent).toBe('bold');
    expect(d.querySelector('p code')?.textContent).toBe('x := 1');
    expect(d.querySelectorAll('li')).toHaveLength(2);
  });

  it('renders fenced code with a language label and a copy button', () => {
    const d = dom(renderMarkdown('```go\nfmt.Println("<hi>")\n```'));
    expect(d.querySelector('.codeblock .lang')?.textContent).toBe('go');
    expect(d.querySelector('pre code')?.className).toBe('language-go');
    expect(d.querySelector('pre code')?.textContent).toBe('fmt.Println("<hi>")');
    const btn = d.querySelector('button[data-copy]')!;
    expect(codeOf(btn)).toBe('fmt.Println("<hi>")');
  });

  it('renders an unclosed fence while a reply streams', () => {
    const d = dom(renderMarkdown('Here:\n```python\nprint(1)\nfor'));
    expect(d.querySelector('pre code')?.textContent).toContain('print(1)');
  });

  it('labels code with an odd language as text', () => {
    const d = dom(renderMarkdown('```"><img src=x onerror=alert(1)>\nx\n```'));
    expect(d.querySelector('.lang')?.textContent).toBe('text');
    expect(d.querySelector('img')).toBeNull();
  });

  const attacks: [string, string][] = [
    ['script block', '<script>window.pwned = 1</script>'],
    ['img onerror', 'hi <img src=x onerror="window.pwned=1"> there'],
    ['svg onload', '<svg onload="window.pwned=1"><circle r=1 /></svg>'],
    ['iframe', '<iframe src="https://example.com"></iframe>'],
    ['inline handler in block html', '<div onclick="window.pwned=1">click</div>'],
    ['style tag', '<style>body{display:none}</style>'],
    ['javascript link', '[click](javascript:window.pwned=1)'],
    ['data link', '[x](data:text/html,<script>alert(1)</script>)'],
    ['html in link text', '[<img src=x onerror=alert(1)>](https://example.com)'],
    ['autolink with quotes', '<https://example.com/"onmouseover="alert(1)>'],
  ];
  it.each(attacks)('never yields live HTML: %s', (_, src) => {
    const html = renderMarkdown(src);
    const d = dom(html);
    expect(d.querySelector('script, img, svg, iframe, style, object, embed')).toBeNull();
    for (const el of d.querySelectorAll('*')) {
      for (const a of el.attributes) {
        expect(a.name.startsWith('on'), `${a.name} on <${el.tagName}>`).toBe(false);
        if (a.name === 'href') expect(a.value).toMatch(/^(https?:|mailto:|#)/i);
      }
    }
  });

  it('shows raw HTML as text rather than dropping it', () => {
    const d = dom(renderMarkdown('Use <b>bold</b> tags'));
    expect(d.querySelector('b')).toBeNull();
    expect(d.textContent).toContain('<b>bold</b>');
  });

  it('keeps safe links', () => {
    const d = dom(renderMarkdown('[docs](https://example.com/a?b=1)'));
    expect(d.querySelector('a')?.getAttribute('href')).toBe('https://example.com/a?b=1');
  });
});

describe('escapeHTML', () => {
  it('escapes the five characters', () => {
    expect(escapeHTML(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});
