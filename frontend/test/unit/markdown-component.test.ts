import { afterEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render } from '@testing-library/svelte';
import Markdown from '../../src/components/Markdown.svelte';

afterEach(() => delete (window as any).runtime);

describe('Markdown component', () => {
  it('copies a code block through the Wails clipboard', async () => {
    const set = vi.fn().mockResolvedValue(true);
    (window as any).runtime = { ClipboardSetText: set };
    const { container } = render(Markdown, { text: 'See:\n```sh\nmake test\n```' });
    const btn = container.querySelector('button[data-copy]') as HTMLButtonElement;
    await fireEvent.click(btn);
    expect(set).toHaveBeenCalledWith('make test');
    await vi.waitFor(() => expect(btn.textContent).toBe('Copied'));
  });

  it('opens links outside the app window', async () => {
    const open = vi.fn();
    (window as any).runtime = { BrowserOpenURL: open };
    const { container } = render(Markdown, { text: '[site](https://example.com)' });
    const a = container.querySelector('a')!;
    const ev = new MouseEvent('click', { bubbles: true, cancelable: true });
    a.dispatchEvent(ev);
    expect(ev.defaultPrevented).toBe(true);
    expect(open).toHaveBeenCalledWith('https://example.com');
  });

  it('renders injected HTML inert', () => {
    (window as any).pwned = 0;
    const { container } = render(Markdown, { text: '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>' });
    expect(container.querySelector('img, script')).toBeNull();
    expect((window as any).pwned).toBe(0);
  });
});
