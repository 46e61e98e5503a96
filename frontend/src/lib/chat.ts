// The conversation view's state and how chat events change it. Pure
// functions, so the streaming logic is tested without a DOM or a daemon.
import type { ChatDone, ChatError, ChatStart, ChatToken, Message } from './types';

/** Thread is the open conversation's messages and its reply in progress. */
export interface Thread {
  id: string;
  messages: Message[];
  streaming: boolean;
  /** partial is the text streamed so far of the reply in progress. */
  partial: string;
  /** partialReasoning is the reasoning streamed so far (thinking models). */
  partialReasoning: string;
  error: string;
}

export function newThread(id: string, messages: Message[] = []): Thread {
  return { id, messages, streaming: false, partial: '', partialReasoning: '', error: '' };
}

/** onStart begins a reply; on regenerate it drops replies after the last user message. */
export function onStart(t: Thread, e: ChatStart): Thread {
  if (e.conversation_id !== t.id) return t;
  let messages = t.messages;
  if (e.user) {
    if (!messages.some((m) => m.id === e.user!.id)) messages = [...messages, e.user];
  } else {
    const last = messages.map((m) => m.role).lastIndexOf('user');
    messages = messages.slice(0, last + 1);
  }
  return { ...t, messages, streaming: true, partial: '', partialReasoning: '', error: '' };
}

export function onToken(t: Thread, e: ChatToken): Thread {
  if (e.conversation_id !== t.id || !t.streaming) return t;
  return { ...t, partial: t.partial + e.text, partialReasoning: t.partialReasoning + (e.reasoning ?? '') };
}

export function onDone(t: Thread, e: ChatDone): Thread {
  if (e.conversation_id !== t.id) return t;
  return { ...t, messages: [...t.messages, e.message], streaming: false, partial: '', partialReasoning: '' };
}

/** onError ends a reply; a stopped reply keeps what streamed as a message. */
export function onError(t: Thread, e: ChatError): Thread {
  if (e.conversation_id !== t.id) return t;
  const messages = e.message ? [...t.messages, e.message] : t.messages;
  return { ...t, messages, streaming: false, partial: '', partialReasoning: '', error: e.stopped ? '' : e.error };
}

/** lastAssistant is the id of the reply that Regenerate would replace. */
export function lastAssistant(t: Thread): string | null {
  const m = t.messages[t.messages.length - 1];
  return m && m.role === 'assistant' ? m.id : null;
}
