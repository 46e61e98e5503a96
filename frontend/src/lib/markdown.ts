// Markdown rendering for replies. Model output is untrusted: raw HTML in
// it is shown as text, never parsed, and the result passes DOMPurify
// before it reaches the DOM. Code blocks get a language label and a copy
// button (wired by the Markdown component through data-copy).
import { Marked, type Tokens } from 'marked';
import DOMPurify from 'dompurify';

/** escapeHTML makes text safe to place inside an element. */
export function escapeHTML(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const langRe = /^[A-Za-z0-9_+#.-]{1,32}$/;

const marked = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    // Raw HTML blocks and inline tags are shown as the text they are.
    html(token: Tokens.HTML | Tokens.Tag): string {
      return escapeHTML(token.text);
    },
    code(token: Tokens.Code): string {
      const lang = (token.lang ?? '').trim().split(/\s+/)[0];
      const label = langRe.test(lang) ? lang : '';
      const cls = label ? ` class="language-${escapeHTML(label)}"` : '';
      return (
        `<div class="codeblock"><div class="codehead"><span class="lang">${escapeHTML(label || 'text')}</span>` +
        `<button type="button" class="copy" data-copy="code">Copy</button></div>` +
        `<pre><code${cls}>${escapeHTML(token.text)}</code></pre></div>\n`
      );
    },
  },
});

const purifyConfig = {
  ALLOWED_TAGS: [
    'a', 'b', 'blockquote', 'br', 'button', 'code', 'del', 'div', 'em', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6',
    'hr', 'i', 'input', 'li', 'ol', 'p', 'pre', 's', 'span', 'strong', 'table', 'tbody', 'td', 'th', 'thead',
    'tr', 'ul',
  ],
  ALLOWED_ATTR: ['href', 'title', 'class', 'type', 'data-copy', 'checked', 'disabled', 'align'],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
};

/** renderMarkdown turns reply text into sanitized HTML. */
export function renderMarkdown(text: string): string {
  const html = marked.parse(text) as string;
  return DOMPurify.sanitize(html, purifyConfig) as string;
}

/** codeOf returns the text of the code block a copy button belongs to. */
export function codeOf(button: Element): string | null {
  const block = button.closest('.codeblock');
  return block?.querySelector('pre code')?.textContent ?? null;
}
