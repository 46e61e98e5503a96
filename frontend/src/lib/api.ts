// The frontend's only way to the Go side. In the desktop app the methods
// are Wails bindings (window.go.app.App) and events come through
// window.runtime; in a browser served by test/appserver the same methods
// are HTTP calls and events a server-sent stream.
import type {
  AdapterInfo,
  AdapterRef,
  Conversation,
  Feedback,
  LearningAction,
  LearningStatus,
  Message,
  Sampling,
  Stats,
  Status,
} from './types';

export type Handler = (data: any) => void;

/** Transport carries method calls and events. */
export interface Transport {
  call(method: string, args: unknown[]): Promise<any>;
  on(event: string, handler: Handler): () => void;
}

declare global {
  interface Window {
    go?: { app?: { App?: Record<string, (...args: unknown[]) => Promise<any>> } };
    runtime?: { EventsOn(name: string, cb: Handler): () => void };
  }
}

/** wailsTransport uses the bindings Wails injects. */
export function wailsTransport(w: Window = window): Transport {
  return {
    call(method, args) {
      const fn = w.go?.app?.App?.[method];
      if (!fn) return Promise.reject(new Error(`no bound method ${method}`));
      return fn(...args);
    },
    on(event, handler) {
      return w.runtime!.EventsOn(event, handler);
    },
  };
}

/** httpTransport talks to test/appserver at base. */
export function httpTransport(base = ''): Transport {
  const handlers = new Map<string, Set<Handler>>();
  let source: EventSource | null = null;
  const connect = () => {
    if (source) return;
    source = new EventSource(`${base}/api/events`);
    source.onmessage = (m) => {
      const e = JSON.parse(m.data) as { name: string; data: unknown };
      handlers.get(e.name)?.forEach((h) => h(e.data));
    };
  };
  return {
    async call(method, args) {
      const res = await fetch(`${base}/api/call/${method}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(args),
      });
      const body = await res.json();
      if (body.error) throw new Error(body.error);
      return body.result;
    },
    on(event, handler) {
      connect();
      let set = handlers.get(event);
      if (!set) handlers.set(event, (set = new Set()));
      set.add(handler);
      return () => set!.delete(handler);
    },
  };
}

/** detectTransport picks Wails when its bindings are present. */
export function detectTransport(): Transport {
  return window.go?.app?.App ? wailsTransport() : httpTransport();
}

/** Api is the typed face of the Go methods of package app. */
export class Api {
  constructor(readonly t: Transport) {}
  on = (event: string, h: Handler) => this.t.on(event, h);
  status = (): Promise<Status> => this.t.call('Status', []);
  listConversations = (): Promise<Conversation[]> => this.t.call('ListConversations', []);
  createConversation = (title = ''): Promise<Conversation> => this.t.call('CreateConversation', [title]);
  loadConversation = (id: string): Promise<Conversation> => this.t.call('LoadConversation', [id]);
  renameConversation = (id: string, title: string): Promise<Conversation> =>
    this.t.call('RenameConversation', [id, title]);
  deleteConversation = (id: string): Promise<void> => this.t.call('DeleteConversation', [id]);
  setSystemPrompt = (id: string, system: string): Promise<Conversation> =>
    this.t.call('SetSystemPrompt', [id, system]);
  setModel = (id: string, model: string): Promise<Conversation> => this.t.call('SetModel', [id, model]);
  setSampling = (id: string, s: Sampling): Promise<Conversation> => this.t.call('SetSampling', [id, s]);
  setAdapters = (id: string, a: AdapterRef[]): Promise<Conversation> => this.t.call('SetAdapters', [id, a]);
  sendMessage = (id: string, text: string): Promise<Message> => this.t.call('SendMessage', [id, text]);
  regenerate = (id: string): Promise<void> => this.t.call('Regenerate', [id]);
  stop = (id: string): Promise<void> => this.t.call('Stop', [id]);
  models = (): Promise<string[]> => this.t.call('Models', []);
  adapters = (): Promise<AdapterInfo[]> => this.t.call('Adapters', []);
  installAdapter = (path: string): Promise<AdapterInfo> => this.t.call('InstallAdapter', [path]);
  removeAdapter = (name: string): Promise<void> => this.t.call('RemoveAdapter', [name]);
  sendFeedback = (conv: string, msg: string, rating: 1 | -1, correction: string): Promise<Feedback> =>
    this.t.call('SendFeedback', [conv, msg, rating, correction]);
  stats = (): Promise<Stats> => this.t.call('Stats', []);
  /** learning is what the daemon learned in the app's scope. */
  learning = (): Promise<LearningStatus> => this.t.call('Learning', []);
  learningAction = (action: LearningAction): Promise<unknown> => this.t.call('LearningAction', [action]);
  /** exportLearning writes the learned adapter (GGUF LoRA); '' picks ~/Downloads. */
  exportLearning = (path = ''): Promise<string> => this.t.call('ExportLearning', [path]);
  /** hideWindow hides the window; the app keeps running in the tray. */
  hideWindow = (): Promise<void> => this.t.call('HideWindow', []);
  /** quit ends the app (the daemon keeps serving other apps). */
  quit = (): Promise<void> => this.t.call('Quit', []);
}
