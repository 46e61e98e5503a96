import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { tick } from 'svelte';
import App from '../../src/App.svelte';
import { Api } from '../../src/lib/api';
import { AppState } from '../../src/lib/store.svelte';
import { Events, type Conversation, type Message } from '../../src/lib/types';
import { FakeTransport } from './fake';

const conv = (id: string, title = ''): Conversation => ({
  id, title, created_at: new Date().toISOString(), updated_at: new Date().toISOString(), message_count: 0,
});
const stats = { prompt_tokens: 9, cached_tokens: 4, completion_tokens: 3, ttft_ms: 12, tokens_per_second: 80 };

let t: FakeTransport;
let s: AppState;

beforeEach(() => {
  localStorage.clear();
  window.matchMedia = vi.fn().mockReturnValue({ matches: false }) as any;
  t = new FakeTransport();
  let n = 0;
  const stored: Message[] = [];
  t.results = {
    Status: () => ({ state: 'ready', message: 'ready', started: false, socket: '/s', version: '0.1' }),
    ListConversations: () => [],
    Models: () => ['tiny'],
    Adapters: () => [{ name: 'style', file: 'f', format: 'gguf', base_model: 'tiny', rank: 8, alpha: 16, targets: [], sha256: '', size: 4096, installed_at: '' }],
    CreateConversation: () => conv('c1'),
    LoadConversation: (id: string) => ({ ...conv(id, 'hi'), messages: stored }),
    SendMessage: (id: string, text: string) => {
      const m: Message = { id: `u${++n}`, role: 'user', content: text, time: '' };
      stored.push(m);
      return m;
    },
    Streaming: () => false,
    Stop: () => undefined,
    Regenerate: () => undefined,
    SendFeedback: () => ({ id: 'fb1' }),
    SetAdapters: (id: string, a: unknown) => ({ ...conv(id, 'hi'), adapters: a }),
    SetSystemPrompt: (id: string, system: string) => ({ ...conv(id, 'hi'), system }),
  };
  s = new AppState(new Api(t));
});

afterEach(() => s.stop());

async function sendHello() {
  render(App, { s });
  const box = await screen.findByRole('textbox', { name: 'Message' });
  await waitFor(() => expect((box as HTMLTextAreaElement).disabled).toBe(false));
  await fireEvent.input(box, { target: { value: 'hello' } });
  await fireEvent.keyDown(box, { key: 'Enter' });
  await waitFor(() => expect(t.called('SendMessage')).toHaveLength(1));
  return box;
}

describe('App', () => {
  it('creates a conversation and sends on Enter', async () => {
    await sendHello();
    expect(t.called('CreateConversation')).toHaveLength(1);
    expect(t.called('SendMessage')[0].args).toEqual(['c1', 'hello']);
  });

  it('streams tokens, shows Stop while streaming, and renders the stored reply', async () => {
    await sendHello();
    t.emit(Events.start, { conversation_id: 'c1', user: { id: 'u1', role: 'user', content: 'hello', time: '' } });
    t.emit(Events.token, { conversation_id: 'c1', text: 'Hi **the' });
    t.emit(Events.token, { conversation_id: 'c1', text: 're**' });
    await tick();
    const partial = document.querySelector('article.assistant.streaming')!;
    expect(partial.querySelector('strong')?.textContent).toBe('there');
    const stop = screen.getByRole('button', { name: 'Stop' });
    await fireEvent.click(stop);
    expect(t.called('Stop')[0].args).toEqual(['c1']);

    t.emit(Events.done, {
      conversation_id: 'c1', completion_id: 'chatcmpl-1', finish_reason: 'stop', stats,
      message: { id: 'a1', role: 'assistant', content: 'Hi **there**', time: '', request_id: 'chatcmpl-1', stats },
    });
    await tick();
    expect(document.querySelector('article.streaming')).toBeNull();
    const reply = document.querySelector('article[data-id="a1"]')!;
    expect(reply.textContent).toContain('80.0 tok/s');
    expect(reply.textContent).toContain('4 cached');
    expect(screen.getByRole('button', { name: 'Send' })).toBeTruthy();
    expect(screen.getByTestId('last-done').dataset.completion).toBe('chatcmpl-1');
  });

  it('regenerates the last reply and sends feedback with a correction', async () => {
    await sendHello();
    t.emit(Events.start, { conversation_id: 'c1', user: { id: 'u1', role: 'user', content: 'hello', time: '' } });
    t.emit(Events.done, {
      conversation_id: 'c1', completion_id: 'x', finish_reason: 'stop', stats,
      message: { id: 'a1', role: 'assistant', content: 'wrong', time: '', request_id: 'x', stats },
    });
    await tick();
    await fireEvent.click(screen.getByRole('button', { name: 'Regenerate' }));
    expect(t.called('Regenerate')[0].args).toEqual(['c1']);

    await fireEvent.click(screen.getByRole('button', { name: 'Bad answer' }));
    const box = screen.getByRole('textbox', { name: 'Correction' });
    await fireEvent.input(box, { target: { value: 'right' } });
    await fireEvent.click(screen.getByRole('button', { name: 'Send feedback' }));
    await waitFor(() => expect(t.called('SendFeedback')).toHaveLength(1));
    expect(t.called('SendFeedback')[0].args).toEqual(['c1', 'a1', -1, 'right']);
    await waitFor(() => expect(screen.queryByRole('textbox', { name: 'Correction' })).toBeNull());
    expect(screen.getByRole('button', { name: 'Bad answer' }).classList.contains('on')).toBe(true);
  });

  it('shows a failed reply and a rejected method as errors', async () => {
    await sendHello();
    t.emit(Events.start, { conversation_id: 'c1', user: { id: 'u1', role: 'user', content: 'hello', time: '' } });
    t.emit(Events.error, { conversation_id: 'c1', error: 'model exploded', stopped: false });
    await tick();
    expect(screen.getByRole('alert').textContent).toBe('model exploded');
    t.results.SendMessage = () => {
      throw new Error('a reply is already streaming in this conversation');
    };
    const box = screen.getByRole('textbox', { name: 'Message' }) as HTMLTextAreaElement;
    await fireEvent.input(box, { target: { value: 'again' } });
    await fireEvent.keyDown(box, { key: 'Enter' });
    await waitFor(() => expect(screen.getByRole('status').textContent).toContain('already streaming'));
    expect(box.value).toBe('again'); // kept for another try
  });

  it('enables an adapter with a scale for the conversation and reports drops', async () => {
    await sendHello();
    await fireEvent.click(screen.getByRole('tab', { name: 'Adapters' }));
    const toggle = await screen.findByRole('checkbox', { name: 'Enable style' });
    await fireEvent.click(toggle);
    await waitFor(() => expect(t.called('SetAdapters')).toHaveLength(1));
    expect(t.called('SetAdapters')[0].args).toEqual(['c1', [{ name: 'style', scale: 1 }]]);
    await waitFor(() => expect(screen.getByText('style × 1.00')).toBeTruthy());

    t.emit(Events.install, { path: '/x/notes.gguf', name: 'notes.gguf', state: 'rejected', error: 'not a LoRA adapter: no lora tensors' });
    await tick();
    const card = screen.getByTestId('install');
    expect(card.dataset.state).toBe('rejected');
    expect(card.textContent).toContain('no lora tensors');
  });

  it('saves the system prompt on blur', async () => {
    await sendHello();
    const sys = await screen.findByRole('textbox', { name: 'System prompt' });
    await fireEvent.input(sys, { target: { value: 'Be brief.' } });
    await fireEvent.blur(sys);
    await waitFor(() => expect(t.called('SetSystemPrompt')[0]?.args).toEqual(['c1', 'Be brief.']));
  });

  it('switches and remembers the theme', async () => {
    render(App, { s });
    await tick();
    expect(document.documentElement.dataset.theme).toBe('light');
    await fireEvent.click(screen.getByRole('button', { name: 'Switch to dark theme' }));
    await tick();
    expect(document.documentElement.dataset.theme).toBe('dark');
    expect(localStorage.getItem('ruvllm.theme')).toBe('dark');
  });
});

describe('keyboard', () => {
  it('Ctrl+Shift+L switches the theme and the composer takes focus when ready', async () => {
    render(App, { s });
    const box = await screen.findByRole('textbox', { name: 'Message' });
    await waitFor(() => expect(document.activeElement).toBe(box));
    await fireEvent.keyDown(window, { key: 'L', ctrlKey: true, shiftKey: true });
    expect(document.documentElement.dataset.theme).toBe('dark');
  });

  it('sends a message typed while a new chat is being created to the new chat', async () => {
    // The browser test clicked "New chat" and sent at once: the message
    // went to the chat being left, and its reply never showed.
    await sendHello();
    let created!: (c: Conversation) => void;
    t.results.CreateConversation = () => new Promise<Conversation>((ok) => (created = ok));
    const opening = s.newChat();
    const sending = s.send('to the new chat');
    await tick();
    expect(t.called('SendMessage')).toHaveLength(1); // held until the chat exists
    created(conv('c2'));
    await opening;
    expect(await sending).toBe(true);
    expect(t.called('SendMessage').at(-1)!.args).toEqual(['c2', 'to the new chat']);
  });
});
