// The built frontend in chromium, talking through test/appserver to a real
// ruvllmd with the synthetic model. Needs `make app-server frontend`
// (bin/appserver, frontend/dist) and chromium ($CHROMIUM, default
// /usr/bin/chromium).
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';

const root = resolve(__dirname, '../../..');
const serverBin = process.env.APPSERVER ?? resolve(root, 'bin/appserver');
const chromiumBin = process.env.CHROMIUM ?? '/usr/bin/chromium';

let server: ChildProcess;
let base = '';
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

async function call(method: string, ...args: unknown[]): Promise<any> {
  const res = await fetch(`${base}/api/call/${method}`, { method: 'POST', body: JSON.stringify(args) });
  const body = await res.json();
  if (body.error) throw new Error(body.error);
  return body.result;
}

async function post(path: string, body: unknown = {}): Promise<any> {
  const res = await fetch(`${base}${path}`, { method: 'POST', body: JSON.stringify(body) });
  return res.json();
}

async function send(text: string) {
  const box = page.getByRole('textbox', { name: 'Message' });
  await box.fill(text);
  const before = await page.evaluate(
    () => (document.querySelector('[data-testid=last-done]') as HTMLElement | null)?.dataset.completion ?? null,
  );
  await box.press('Enter');
  await page.waitForFunction(
    (prev) => {
      const el = document.querySelector('[data-testid=last-done]') as HTMLElement | null;
      return el && el.dataset.completion && el.dataset.completion !== prev;
    },
    before,
    { timeout: 60000 },
  );
}

beforeAll(async () => {
  if (!existsSync(serverBin)) throw new Error(`${serverBin} missing: run make app-server`);
  if (!existsSync(resolve(root, 'frontend/dist/index.html'))) throw new Error('frontend/dist missing: run make frontend');
  server = spawn(serverBin, ['--dist', resolve(root, 'frontend/dist')], { stdio: ['ignore', 'pipe', 'inherit'] });
  base = await new Promise<string>((ok, fail) => {
    const rl = createInterface({ input: server.stdout! });
    rl.on('line', (l) => {
      const m = l.match(/listening on (http:\/\/\S+)/);
      if (m) ok(m[1]);
    });
    server.on('exit', (code) => fail(new Error(`appserver exited ${code}`)));
  });
  browser = await chromium.launch({ executablePath: chromiumBin, args: ['--no-sandbox', '--disable-gpu'] });
  page = await browser.newPage({ viewport: { width: 1180, height: 780 } });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(base);
  await page.getByTestId('status').filter({ hasText: 'ruvllmd' }).waitFor({ timeout: 120000 });
});

afterAll(async () => {
  await browser?.close();
  server?.kill('SIGTERM');
  expect(pageErrors).toEqual([]);
});

describe('app in chromium against ruvllmd', () => {
  it('streams a reply, stores it and shows its figures', async () => {
    // Count the distinct texts the reply in progress shows: streaming
    // means the page saw it grow, not only the finished message.
    await page.evaluate(() => {
      const seen = new Set<string>();
      (window as any).__seen = seen;
      new MutationObserver(() => {
        const el = document.querySelector('article.streaming .md');
        if (el) seen.add(el.textContent ?? '');
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    await send('Tell me a story about a cat');
    // The synthetic model samples, and may end its reply after a token
    // or two, too short to be seen growing: regenerate it in place until
    // it has at least three tokens, then judge the streaming on it.
    const list = await call('ListConversations');
    const load = async () => {
      let c = await call('LoadConversation', list[0].id);
      for (let t = 0; t < 100 && c.messages.length < 2; t++) {
        await new Promise((ok) => setTimeout(ok, 50));
        c = await call('LoadConversation', list[0].id);
      }
      return c;
    };
    let stored = await load();
    for (let i = 0; i < 4 && stored.messages[1].stats.completion_tokens < 3; i++) {
      const before = await page.getByTestId('last-done').getAttribute('data-completion');
      await page.evaluate(() => (window as any).__seen.clear());
      await page.getByRole('button', { name: 'Regenerate' }).click();
      await page.waitForFunction(
        (prev) => (document.querySelector('[data-testid=last-done]') as HTMLElement)?.dataset.completion !== prev,
        before,
        { timeout: 60000 },
      );
      stored = await load();
    }
    expect(await page.evaluate(() => (window as any).__seen.size)).toBeGreaterThan(2);
    const conv = page.locator('.conv.active');
    await expect.poll(() => conv.innerText()).toContain('Tell me a story about a cat');
    expect(stored.messages.map((m: any) => m.role)).toEqual(['user', 'assistant']);
    const reply = stored.messages[1];
    expect(reply.content.length).toBeGreaterThan(0);
    expect(reply.stats.completion_tokens).toBeGreaterThan(0);
    const meta = await page.locator(`article[data-id="${reply.id}"] .meta`).innerText();
    expect(meta).toContain(`${reply.stats.completion_tokens} tok`);
    expect(await page.getByTestId('last-done').getAttribute('data-completion')).toBe(reply.request_id);
  });

  it('regenerates the last reply in place', async () => {
    const before = await page.getByTestId('last-done').getAttribute('data-completion');
    await page.getByRole('button', { name: 'Regenerate' }).click();
    await page.waitForFunction(
      (prev) => (document.querySelector('[data-testid=last-done]') as HTMLElement)?.dataset.completion !== prev,
      before,
      { timeout: 60000 },
    );
    expect(await page.locator('article.msg').count()).toBe(2);
    const list = await call('ListConversations');
    const stored = await call('LoadConversation', list[0].id);
    expect(stored.messages).toHaveLength(2);
    expect(stored.messages[1].request_id).not.toBe(before);
  });

  it('rates a reply and sends a correction to the daemon', async () => {
    const reply = page.locator('article.assistant').last();
    await reply.getByRole('button', { name: 'Good answer' }).click();
    const isOn = (name: string) => reply.getByRole('button', { name }).evaluate((b) => b.classList.contains('on'));
    await expect.poll(() => isOn('Good answer')).toBe(true);
    await reply.getByRole('button', { name: 'Bad answer' }).click();
    await reply.getByRole('textbox', { name: 'Correction' }).fill('A short story about a cat.');
    await reply.getByRole('button', { name: 'Send feedback' }).click();
    await expect.poll(() => isOn('Bad answer')).toBe(true);
    expect(await page.getByRole('status').allInnerTexts()).toEqual([]); // no error toast
  });

  it('keeps a system prompt per conversation', async () => {
    const sys = page.getByRole('textbox', { name: 'System prompt' });
    await sys.fill('You answer in one word.');
    await sys.blur();
    const first = (await call('ListConversations'))[0].id;
    await expect.poll(async () => (await call('LoadConversation', first)).system).toBe('You answer in one word.');
    await page.getByRole('button', { name: 'New chat' }).click();
    await expect.poll(() => sys.inputValue()).toBe('');
    await page.locator('.conv', { hasText: 'Tell me a story' }).locator('.pick').click();
    await expect.poll(() => sys.inputValue()).toBe('You answer in one word.');
  });

  it('installs a dropped adapter, applies it with a scale, and shows why junk is rejected', async () => {
    await page.getByRole('tab', { name: 'Adapters' }).click();
    const { path } = await post('/api/fixture/adapter');
    await post('/api/drop', { paths: [path] });
    const name = path.split('/').pop().replace(/\.gguf$/, '');
    await page.locator('[data-testid=install][data-state=installed]').waitFor({ timeout: 60000 });
    const card = page.locator(`[data-testid=adapter][data-name="${name}"]`);
    await card.waitFor();
    expect(await card.innerText()).toMatch(/rank \d+/);

    await card.locator('.switch span').click();
    expect(await card.getByRole('checkbox').isChecked()).toBe(true);
    const conv = (await call('ListConversations')).find((c: any) => c.title.startsWith('Tell me'));
    await expect.poll(async () => (await call('LoadConversation', conv.id)).adapters).toEqual([{ name, scale: 1 }]);
    await expect.poll(() => page.locator('.chip.accent').innerText()).toBe(`${name} × 1.00`);
    await send('Now with the adapter');
    const stored = await call('LoadConversation', conv.id);
    expect(stored.messages.at(-1).role).toBe('assistant');

    const junk = await post('/api/fixture/junk');
    await post('/api/drop', { paths: [junk.path] });
    const rejected = page.locator('[data-testid=install][data-state=rejected]');
    await rejected.waitFor({ timeout: 30000 });
    expect((await rejected.locator('.why').innerText()).length).toBeGreaterThan(5);

    await card.getByRole('button', { name: `Remove ${name}` }).click();
    await card.waitFor({ state: 'detached' });
    expect((await call('Adapters')).map((a: any) => a.name)).not.toContain(name);
  });

  it('shows speed, cache and memory figures', async () => {
    // The last reply (with a random adapter) may be empty, and an empty
    // reply rightly has no TTFT: ask in a new chat until a reply has text
    // (the synthetic model samples; an empty reply is rare without the
    // adapter).
    await page.getByRole('button', { name: 'New chat', exact: true }).click();
    for (let i = 0; i < 3; i++) {
      await send(`What do the stats say? (${i})`);
      const replies = (await call('Stats')).replies;
      if (replies.at(-1)?.ttft_ms > 0) break;
    }
    await page.getByRole('tab', { name: 'Stats' }).click();
    await expect.poll(() => page.getByTestId('ttft').innerText(), { timeout: 15000 }).toMatch(/\d+(\.\d+)? m?s/);
    expect(await page.getByTestId('tps').innerText()).toMatch(/tok\/s/);
    expect(await page.getByTestId('memory').innerText()).toMatch(/[KMG]iB/);
    expect(await page.getByTestId('hitrate').innerText()).toMatch(/%/);
    const stats = await call('Stats');
    expect(await page.getByTestId('cached').innerText()).toBe(String(stats.replies.at(-1).cached_tokens));
  });

  it('learns from a correction and shows it in the Learning tab', async () => {
    await page.getByRole('button', { name: 'New chat', exact: true }).click();
    await send('What is a pipe?');
    const reply = page.locator('article.assistant').last();
    await reply.getByRole('button', { name: 'Bad answer' }).click();
    await reply.getByRole('textbox', { name: 'Correction' }).fill('A pipe joins two programs. Cheers, Ana.');
    await reply.getByRole('button', { name: 'Send feedback' }).click();
    // The answer of the feedback (first step) or the learning.applied event.
    await expect.poll(() => reply.getByTestId('learned').innerText(), { timeout: 60000 }).toMatch(/^Learned/);

    await page.getByRole('tab', { name: 'Learning' }).click();
    await expect.poll(() => page.getByTestId('applied').innerText(), { timeout: 15000 }).toMatch(/^[1-9]/);
    expect(Number(await page.getByTestId('received').innerText())).toBeGreaterThanOrEqual(1);
    expect(await page.getByTestId('signals').innerText()).toMatch(/correction/);
    expect(await page.getByTestId('trend').getAttribute('points')).toMatch(/\d/);
    if (process.env.SHOTS) await page.screenshot({ path: `${process.env.SHOTS}/browser-learning.png` });
    const before = Number(await page.getByTestId('version').innerText());
    await page.getByRole('button', { name: 'Undo' }).click();
    await expect.poll(async () => Number(await page.getByTestId('version').innerText()), { timeout: 15000 }).toBeGreaterThan(before);
    await expect.poll(() => page.getByRole('button', { name: 'Undo' }).isDisabled()).toBe(true);
  });

  it('switches to the dark theme', async () => {
    await page.getByRole('button', { name: 'Switch to dark theme' }).click();
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(bg).toBe('rgb(21, 22, 26)');
    if (process.env.SHOTS) await page.screenshot({ path: `${process.env.SHOTS}/browser-dark.png` });
  });
});
