// The app's state: connection, conversations, the open thread, models,
// adapters and stats, kept in Svelte runes and changed by user actions
// and by events from the Go side.
import { Api } from './api';
import { newThread, onDone, onError, onStart, onToken, type Thread } from './chat';
import {
  Events,
  type AdapterInfo,
  type AdapterInstall,
  type AdapterRef,
  type ChatDone,
  type Conversation,
  type FeedbackLearning,
  type LearningAction,
  type LearningStatus,
  type Sampling,
  type Stats,
  type Status,
} from './types';

export type Panel = 'settings' | 'adapters' | 'learning' | 'stats';

export class AppState {
  status = $state<Status>({ state: 'connecting', message: 'Connecting to ruvllmd…', started: false, socket: '' });
  conversations = $state<Conversation[]>([]);
  current = $state<Conversation | null>(null);
  thread = $state<Thread>(newThread(''));
  models = $state<string[]>([]);
  adapters = $state<AdapterInfo[]>([]);
  installs = $state<AdapterInstall[]>([]);
  stats = $state<Stats | null>(null);
  panel = $state<Panel>('settings');
  /** feedback given this session: message id → rating. */
  rated = $state<Record<string, 1 | -1>>({});
  /** what learning did with that feedback: message id → outcome. */
  learned = $state<Record<string, FeedbackLearning>>({});
  learning = $state<LearningStatus | null>(null);
  toast = $state('');
  /** lastDone is the newest finished reply, for the footer and tests. */
  lastDone = $state<ChatDone | null>(null);

  private offs: (() => void)[] = [];
  private loaded = false;
  /** switching is the conversation change in progress (newChat, select):
   * a message sent meanwhile waits for it, so that it goes to the chat the
   * user chose and not to the one being left. */
  private switching: Promise<unknown> | null = null;

  constructor(readonly api: Api) {}

  /** start subscribes to events and loads once the daemon is ready. */
  async start() {
    const on = (n: string, h: (d: any) => void) => this.offs.push(this.api.on(n, h));
    on(Events.status, (s: Status) => this.setStatus(s));
    on(Events.start, (e) => (this.thread = onStart(this.thread, e)));
    on(Events.token, (e) => (this.thread = onToken(this.thread, e)));
    on(Events.done, (e: ChatDone) => {
      this.thread = onDone(this.thread, e);
      this.lastDone = e;
      this.touch(e.conversation_id);
      if (this.panel === 'stats') this.refreshStats();
    });
    on(Events.error, (e) => {
      this.thread = onError(this.thread, e);
      if (e.conversation_id === this.thread.id && !e.stopped) this.flash(e.error);
    });
    on(Events.install, (e: AdapterInstall) => this.onInstall(e));
    on(Events.daemon, (e: { type: string; data?: any }) => {
      if (e.type?.startsWith('adapter.')) this.refreshAdapters();
      if (e.type === 'learning.applied' && e.data) this.onLearned(e.data as FeedbackLearning);
      if (e.type?.startsWith('learning.') && this.panel === 'learning') this.refreshLearning();
    });
    try {
      this.setStatus(await this.api.status());
    } catch (err) {
      this.flash(String(err));
    }
  }

  stop() {
    this.offs.forEach((f) => f());
    this.offs = [];
  }

  private setStatus(s: Status) {
    this.status = s;
    if (s.state === 'ready' && !this.loaded) {
      this.loaded = true;
      this.load();
    }
  }

  flash(msg: string) {
    this.toast = msg.replace(/^Error: /, '');
    setTimeout(() => {
      if (this.toast === msg) this.toast = '';
    }, 6000);
  }

  private async guard<T>(p: Promise<T>): Promise<T | undefined> {
    try {
      return await p;
    } catch (err) {
      this.flash(err instanceof Error ? err.message : String(err));
      return undefined;
    }
  }

  async load() {
    const [convs, models] = await Promise.all([
      this.guard(this.api.listConversations()),
      this.guard(this.api.models()),
    ]);
    this.conversations = convs ?? [];
    this.models = models ?? [];
    this.refreshAdapters();
    if (this.conversations.length) await this.select(this.conversations[0].id);
  }

  async refreshAdapters() {
    this.adapters = (await this.guard(this.api.adapters())) ?? this.adapters;
  }

  async refreshStats() {
    const s = await this.guard(this.api.stats());
    if (s) this.stats = s;
  }

  async refreshConversations() {
    this.conversations = (await this.guard(this.api.listConversations())) ?? this.conversations;
  }

  private touch(id: string) {
    this.refreshConversations();
    if (this.current?.id === id) {
      this.api.loadConversation(id).then((c) => {
        if (this.current?.id === id) this.current = { ...c, messages: undefined };
      }, () => {});
    }
  }

  /** switchTo runs a change of conversation as the one in progress. */
  private async switchTo(change: () => Promise<void>) {
    const p = change();
    this.switching = p;
    try {
      await p;
    } finally {
      if (this.switching === p) this.switching = null;
    }
  }

  select(id: string) {
    return this.switchTo(() => this.openConversation(id));
  }

  private async openConversation(id: string) {
    const c = await this.guard(this.api.loadConversation(id));
    if (!c) return;
    this.current = { ...c, messages: undefined };
    const t = newThread(c.id, c.messages ?? []);
    const streaming = (await this.guard(this.api.t.call('Streaming', [c.id]))) === true;
    this.thread = { ...t, streaming };
  }

  newChat() {
    return this.switchTo(() => this.create());
  }

  private async create() {
    const c = await this.guard(this.api.createConversation(''));
    if (!c) return;
    this.conversations = [c, ...this.conversations];
    this.current = c;
    this.thread = newThread(c.id);
  }

  async send(text: string): Promise<boolean> {
    text = text.trim();
    if (this.switching) await this.switching;
    if (!text || this.thread.streaming) return false;
    if (!this.current) await this.newChat();
    if (!this.current) return false;
    const id = this.current.id;
    const user = await this.guard(this.api.sendMessage(id, text));
    if (!user) return false;
    // chat:start normally adds it first; this covers a missed event.
    if (this.thread.id === id && !this.thread.messages.some((m) => m.id === user.id)) {
      this.thread = { ...this.thread, messages: [...this.thread.messages, user], streaming: true };
    }
    this.refreshConversations();
    return true;
  }

  async stopReply() {
    if (this.current) await this.guard(this.api.stop(this.current.id));
  }

  async regenerate() {
    if (this.current) await this.guard(this.api.regenerate(this.current.id));
  }

  async remove(id: string) {
    if ((await this.guard(this.api.deleteConversation(id).then(() => true))) !== true) return;
    this.conversations = this.conversations.filter((c) => c.id !== id);
    if (this.current?.id === id) {
      this.current = null;
      this.thread = newThread('');
      if (this.conversations.length) await this.select(this.conversations[0].id);
    }
  }

  async rename(id: string, title: string) {
    const c = await this.guard(this.api.renameConversation(id, title));
    if (c) this.replace(c);
  }

  private replace(c: Conversation) {
    const meta = { ...c, messages: undefined };
    this.conversations = this.conversations.map((x) => (x.id === c.id ? { ...x, ...meta } : x));
    if (this.current?.id === c.id) this.current = meta;
  }

  async setSystem(system: string) {
    if (!this.current) return;
    const c = await this.guard(this.api.setSystemPrompt(this.current.id, system));
    if (c) this.replace(c);
  }

  async setModel(model: string) {
    if (!this.current) return;
    const c = await this.guard(this.api.setModel(this.current.id, model));
    if (c) this.replace(c);
  }

  async setSampling(s: Sampling) {
    if (!this.current) return;
    const c = await this.guard(this.api.setSampling(this.current.id, s));
    if (c) this.replace(c);
  }

  async setAdapters(refs: AdapterRef[]) {
    if (!this.current) return;
    const c = await this.guard(this.api.setAdapters(this.current.id, refs));
    if (c) this.replace(c);
  }

  async removeAdapter(name: string) {
    if ((await this.guard(this.api.removeAdapter(name).then(() => true))) !== true) return;
    this.adapters = this.adapters.filter((a) => a.name !== name);
    if (this.current?.adapters?.some((a) => a.name === name)) {
      await this.setAdapters(this.current.adapters.filter((a) => a.name !== name));
    }
  }

  private onInstall(e: AdapterInstall) {
    const rest = this.installs.filter((i) => i.path !== e.path);
    this.installs = [e, ...rest].slice(0, 5);
    this.panel = 'adapters';
    if (e.state === 'installed') this.refreshAdapters();
  }

  dismissInstall(path: string) {
    this.installs = this.installs.filter((i) => i.path !== path);
  }

  async feedback(messageId: string, rating: 1 | -1, correction = ''): Promise<boolean> {
    if (!this.current) return false;
    const f = await this.guard(this.api.sendFeedback(this.current.id, messageId, rating, correction));
    if (!f) return false;
    this.rated = { ...this.rated, [messageId]: rating };
    if (f.learning) this.learned = { ...this.learned, [messageId]: f.learning };
    return true;
  }

  /** onLearned records a learning.applied event on the reply it names. */
  private onLearned(l: FeedbackLearning) {
    const m = this.thread.messages.find((x) => x.request_id && x.request_id === l.request_id);
    if (!m) return;
    const prev = this.learned[m.id];
    // The answer to the feedback may come first with the first step; the
    // event ends the update with its figures.
    if (prev?.status === 'applied' && l.status === 'applied') l = { ...l, latency_ms: prev.latency_ms ?? l.latency_ms };
    this.learned = { ...this.learned, [m.id]: l };
  }

  async refreshLearning() {
    const l = await this.guard(this.api.learning());
    if (l) this.learning = l;
  }

  async learningAction(action: LearningAction): Promise<boolean> {
    const ok = (await this.guard(this.api.learningAction(action).then(() => true))) === true;
    await this.refreshLearning();
    return ok;
  }

  async exportLearning(): Promise<string | undefined> {
    const path = await this.guard(this.api.exportLearning(''));
    if (path) this.flash(`Saved ${path}`);
    return path;
  }
}
