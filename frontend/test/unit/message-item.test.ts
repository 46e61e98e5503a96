import { describe, expect, it } from 'vitest';
import { render } from '@testing-library/svelte';
import MessageItem from '../../src/components/MessageItem.svelte';
import type { Message } from '../../src/lib/types';

const stats = { prompt_tokens: 200, cached_tokens: 0, completion_tokens: 8, ttft_ms: 30, tokens_per_second: 50 };
const reply = (extra: Partial<typeof stats> & Record<string, number>): Message => ({
  id: 'a1', role: 'assistant', content: 'Pages are reclaimed.', time: '', stats: { ...stats, ...extra },
});

describe('MessageItem', () => {
  it('says when earlier messages were left out of a reply', () => {
    const { getByTestId } = render(MessageItem, { message: reply({ dropped_messages: 6, dropped_tokens: 410 }) });
    expect(getByTestId('left-out').textContent).toContain('Earlier messages were left out');
    expect(getByTestId('left-out').textContent).toContain('6 messages, 410 tokens');
  });

  it('says nothing when the whole conversation fit', () => {
    const { queryByTestId } = render(MessageItem, { message: reply({}) });
    expect(queryByTestId('left-out')).toBeNull();
  });

  it('waits for the reply to finish', () => {
    const { queryByTestId } = render(MessageItem, { message: reply({ dropped_messages: 2, dropped_tokens: 9 }), streaming: true });
    expect(queryByTestId('left-out')).toBeNull();
  });

  it('folds a thinking model\'s reasoning above the reply', () => {
    const m: Message = { ...reply({}), reasoning_content: 'The pages are old.' };
    const { getByTestId } = render(MessageItem, { message: m });
    const d = getByTestId('thinking') as HTMLDetailsElement;
    expect(d.textContent).toContain('The pages are old.');
    expect(d.querySelector('summary')?.textContent).toBe('Thought');
    expect(d.open).toBe(false);
  });

  it('shows the reasoning open while it streams, before the reply', () => {
    const m: Message = { id: 'partial', role: 'assistant', content: '', reasoning_content: 'Let me see', time: '' };
    const { getByTestId } = render(MessageItem, { message: m, streaming: true });
    const d = getByTestId('thinking') as HTMLDetailsElement;
    expect(d.open).toBe(true);
    expect(d.querySelector('summary')?.textContent).toBe('Thinking…');
  });

  it('has no reasoning block for a model that does not think', () => {
    const { queryByTestId } = render(MessageItem, { message: reply({}) });
    expect(queryByTestId('thinking')).toBeNull();
  });
});
