import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import LearningPanel from '../../src/components/LearningPanel.svelte';
import MessageItem from '../../src/components/MessageItem.svelte';
import { Api } from '../../src/lib/api';
import { AppState } from '../../src/lib/store.svelte';
import { newThread } from '../../src/lib/chat';
import { Events, type LearningScope, type LearningStatus } from '../../src/lib/types';
import { FakeTransport } from './fake';

const point = (signal: string, loss: number) => ({ at: '2026-01-01T00:00:00Z', kind: 'feedback' as const, signal, loss, after: loss / 2, version: 1 });

function scope(over: Partial<LearningScope> = {}): LearningScope {
  return {
    scope: 'user', model: 'tiny', paused: false, version: 7, received: 5, applied: 4, pending: 1, queued: 2, unlearned: 0, unlearnable: 0,
    steps: 8, consolidations: 1, deep_runs: 1, deep_accepted: 1, last_update: '2026-01-01T00:00:00Z', exchanges: 4, validation: 1,
    trajectories: 5, adapters: [{ kind: 'consolidated', rank: 8, params: 100 }, { kind: 'micro', rank: 4, params: 50 }],
    candidates: [{ at: '2026-01-01T00:00:00Z', accepted: true, train: 4, holdout: 1, holdout_nll: 1.25, current_holdout_nll: 2.5,
      general_ppl: 180.5, current_general_ppl: 180, duration_ms: 1500 }],
    history: [point('correction', 6), point('correction', 4), point('thumbs-up', 3), point('regenerate', 0.002), point('correction', 2),
      { at: '2026-01-01T00:00:00Z', kind: 'consolidate', loss: 1 }],
    can_undo: true,
    ...over,
  };
}

let t: FakeTransport;
let s: AppState;
let status: LearningStatus;

beforeEach(() => {
  t = new FakeTransport();
  status = { enabled: true, per_app: false, models: [{ model: 'tiny', status: 'ready', scopes: [scope()] }] };
  t.results = {
    Learning: () => status,
    LearningAction: (a: string) => ({ action: a, scopes: [] }),
    ExportLearning: () => '/home/u/Downloads/ruvllm-learned.gguf',
  };
  s = new AppState(new Api(t));
});

afterEach(() => s.stop());

describe('Learning tab', () => {
  it('shows what was learned, from how many signals, and the trend', async () => {
    render(LearningPanel, { s });
    expect((await screen.findByTestId('received')).textContent).toBe('5');
    expect(screen.getByTestId('applied').textContent).toBe('4');
    expect(screen.getByTestId('waiting').textContent).toBe('1');
    expect(screen.getByTestId('version').textContent).toBe('7');
    expect(screen.getByTestId('signals').textContent).toBe('3 corrections, 1 thumbs-up, 1 regenerates');
    expect(screen.getByTestId('adapters').textContent).toMatch(/consolidated \(rank 8\), micro \(rank 4\)/);
    // One point per learned correction or thumbs-up (the regenerate's
    // unlikelihood and the consolidation left out); the highest loss at
    // the top.
    const pts = screen.getByTestId('trend').getAttribute('points')!.split(' ').map((p) => p.split(',').map(Number));
    expect(pts).toHaveLength(4);
    expect(pts[0][1]).toBeLessThan(pts[3][1]);
    expect(screen.getByTestId('validation').textContent).toMatch(/1\.250 \(before 2\.500\)/);
  });

  it('pauses, undoes, resets after a confirmation, and exports', async () => {
    render(LearningPanel, { s });
    await fireEvent.click(await screen.findByRole('button', { name: 'Pause' }));
    await waitFor(() => expect(t.called('LearningAction').map((c) => c.args)).toEqual([['pause']]));
    await fireEvent.click(screen.getByRole('button', { name: 'Undo' }));
    await waitFor(() => expect(t.called('LearningAction')).toHaveLength(2));
    await fireEvent.click(screen.getByRole('button', { name: 'Reset' }));
    expect(t.called('LearningAction')).toHaveLength(2); // not before the confirmation
    await fireEvent.click(screen.getByRole('button', { name: 'Forget all' }));
    await waitFor(() => expect(t.called('LearningAction').at(-1)!.args).toEqual(['reset']));
    await fireEvent.click(screen.getByRole('button', { name: 'Export' }));
    await waitFor(() => expect(s.toast).toMatch(/Saved .*ruvllm-learned\.gguf/));
    expect(t.called('ExportLearning')[0].args).toEqual(['']);
    expect(t.called('Learning').length).toBeGreaterThan(2); // refreshed after each action
  });

  it('offers resume when paused and no undo without an update', async () => {
    status.models[0].scopes = [scope({ paused: true, can_undo: false })];
    render(LearningPanel, { s });
    expect(await screen.findByTestId('paused')).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Resume' })).toBeTruthy();
    expect((screen.getByRole('button', { name: 'Undo' }) as HTMLButtonElement).disabled).toBe(true);
  });

  it('says when learning is off or the model cannot learn', async () => {
    status = { enabled: false, per_app: false, models: [] };
    const { unmount } = render(LearningPanel, { s });
    expect(await screen.findByTestId('learning-off')).toBeTruthy();
    unmount();
    status = { enabled: true, per_app: false, models: [{ model: 'g', status: 'unsupported', error: 'architecture "gemma2" not supported', scopes: [] }] };
    s.learning = null;
    render(LearningPanel, { s });
    expect((await screen.findByTestId('learning-unsupported')).textContent).toMatch(/gemma2/);
  });
});

describe('feedback buttons', () => {
  it('say when a reply was learned', async () => {
    const message = { id: 'a1', role: 'assistant' as const, content: 'Hi', time: '', request_id: 'chatcmpl-1' };
    const { rerender } = render(MessageItem, { message, learned: { status: 'queued' } });
    expect(screen.getByTestId('learned').textContent).toBe('Learning…');
    await rerender({ message, learned: { status: 'applied', latency_ms: 42, version: 3 } });
    expect(screen.getByTestId('learned').textContent).toBe('Learned in 42 ms');
  });

  it('the store keeps the answer and follows learning events', async () => {
    t.results.Status = () => ({ state: 'connecting', message: '', started: false, socket: '' });
    t.results.SendFeedback = () => ({ id: 'fb1', learning: { status: 'queued', request_id: 'chatcmpl-1' } });
    await s.start();
    s.current = { id: 'c1', title: '', created_at: '', updated_at: '', message_count: 2 };
    s.thread = newThread('c1', [
      { id: 'u1', role: 'user', content: 'q', time: '' },
      { id: 'a1', role: 'assistant', content: 'Hi', time: '', request_id: 'chatcmpl-1' },
    ]);
    expect(await s.feedback('a1', -1, 'Hello')).toBe(true);
    expect(s.learned.a1.status).toBe('queued');
    t.emit(Events.daemon, { type: 'learning.applied', data: { status: 'applied', request_id: 'chatcmpl-1', latency_ms: 80 } });
    expect(s.learned.a1).toMatchObject({ status: 'applied', latency_ms: 80 });
    t.emit(Events.daemon, { type: 'learning.applied', data: { status: 'applied', request_id: 'chatcmpl-other' } });
    expect(Object.keys(s.learned)).toEqual(['a1']);
  });
});
