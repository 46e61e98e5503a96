// Copy text through Wails' clipboard in the desktop app, else the browser's.
export async function copyText(text: string): Promise<void> {
  const rt = (window as any).runtime;
  if (rt?.ClipboardSetText) {
    const ok = await rt.ClipboardSetText(text);
    if (ok === false) throw new Error('clipboard refused the text');
    return;
  }
  await navigator.clipboard.writeText(text);
}

/** openLink opens a link in the system browser, never inside the app window. */
export function openLink(href: string) {
  const rt = (window as any).runtime;
  if (rt?.BrowserOpenURL) rt.BrowserOpenURL(href);
  else window.open(href, '_blank', 'noopener');
}
