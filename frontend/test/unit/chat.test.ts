import { describe, expect, it } from 'vitest';
import { lastAssistant, newThread, onDone, onError, onStart, onToken } from '../../src/lib/chat';
import type { Message } from '../../src/lib/types';

const msg = (id: string, role: Message['role'], content: string): Message => ({ id, role, content, time: '' });
const stats = { prompt_tokens: 5, cached_tokens: 0, completion_tokens: 3, ttft_ms: 10, tokens_per_second: 50 };

describe('thread streaming', () => {
  it('streams tokens into a reply and stores it on done', () => {
    let t = newThread('c1');
    t = onStart(t, { conversation_id: 'c1', user: msg('u1', 'user', 'hi') });
    expect(t.streaming).toBe(true);
    expect(t.messages.map((m) => m.id)).toEqual(['u1']);
    for (const piece of ['Hel', 'lo', ' there']) t = onToken(t, { conversation_id: 'c1', text: piece });
    expect(t.partial).toBe('Hello there');
    t = onDone(t, { conversation_id: 'c1', completion_id: 'x', message: msg('a1', 'assistant', 'Hello there'), stats, finish_reason: 'stop' });
    expect(t.streaming).toBe(false);
    expect(t.partial).toBe('');
    expect(t.messages.map((m) => m.content)).toEqual(['hi', 'Hello there']);
    expect(lastAssistant(t)).toBe('a1');
  });

  it('streams a thinking model\'s reasoning apart from the reply', () => {
    let t = onStart(newThread('c1'), { conversation_id: 'c1', user: msg('u1', 'user', 'hi') });
    t = onToken(t, { conversation_id: 'c1', text: '', reasoning: 'Let me ' });
    t = onToken(t, { conversation_id: 'c1', text: '', reasoning: 'see.' });
    t = onToken(t, { conversation_id: 'c1', text: 'Hello' });
    expect(t.partialReasoning).toBe('Let me see.');
    expect(t.partial).toBe('Hello');
    const done = { ...msg('a1', 'assistant', 'Hello'), reasoning_content: 'Let me see.' };
    t = onDone(t, { conversation_id: 'c1', completion_id: 'x', message: done, stats, finish_reason: 'stop' });
    expect(t.partialReasoning).toBe('');
    expect(t.messages.at(-1)?.reasoning_content).toBe('Let me see.');
    t = onStart(t, { conversation_id: 'c1' });
    expect(t.partialReasoning).toBe('');
  });

  it('ignores events of other conversations', () => {
    let t = onStart(newThread('c1'), { conversation_id: 'c1', user: msg('u1', 'user', 'hi') });
    const before = t;
    t = onToken(t, { conversation_id: 'c2', text: 'x' });
    t = onDone(t, { conversation_id: 'c2', completion_id: 'x', message: msg('a9', 'assistant', 'x'), stats, finish_reason: 'stop' });
    t = onError(t, { conversation_id: 'c2', error: 'boom', stopped: false });
    expect(t).toBe(before);
  });

  it('ignores tokens when no reply is streaming', () => {
    const t = newThread('c1');
    expect(onToken(t, { conversation_id: 'c1', text: 'late' }).partial).toBe('');
  });

  it('does not duplicate a user message it already has', () => {
    const t = newThread('c1', [msg('u1', 'user', 'hi')]);
    expect(onStart(t, { conversation_id: 'c1', user: msg('u1', 'user', 'hi') }).messages).toHaveLength(1);
  });

  it('regenerate drops replies after the last user message', () => {
    const t = newThread('c1', [msg('u1', 'user', 'a'), msg('a1', 'assistant', 'b'), msg('u2', 'user', 'c'), msg('a2', 'assistant', 'd')]);
    const r = onStart(t, { conversation_id: 'c1' });
    expect(r.messages.map((m) => m.id)).toEqual(['u1', 'a1', 'u2']);
    expect(lastAssistant(r)).toBeNull();
  });

  it('a stopped reply keeps what streamed and shows no error', () => {
    let t = onStart(newThread('c1'), { conversation_id: 'c1', user: msg('u1', 'user', 'hi') });
    t = onToken(t, { conversation_id: 'c1', text: 'par' });
    t = onError(t, { conversation_id: 'c1', error: 'stopped', stopped: true, message: msg('a1', 'assistant', 'par') });
    expect(t.streaming).toBe(false);
    expect(t.error).toBe('');
    expect(t.messages.at(-1)?.content).toBe('par');
  });

  it('a failed reply shows its error', () => {
    let t = onStart(newThread('c1'), { conversation_id: 'c1', user: msg('u1', 'user', 'hi') });
    t = onError(t, { conversation_id: 'c1', error: 'model not found', stopped: false });
    expect(t.error).toBe('model not found');
    expect(t.messages).toHaveLength(1);
  });
});
