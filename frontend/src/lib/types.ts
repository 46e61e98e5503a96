// Types mirroring the Go side (package app and package ipc). JSON field
// names are the wire names.

export interface AdapterRef {
  name: string;
  scale?: number;
}

export interface ReplyStats {
  prompt_tokens: number;
  cached_tokens: number;
  completion_tokens: number;
  ttft_ms: number;
  tokens_per_second: number;
  // What the daemon left out to fit the model's context (absent: nothing).
  dropped_messages?: number;
  dropped_tokens?: number;
  context_shifts?: number;
}

export interface Message {
  id: string;
  role: 'user' | 'assistant' | 'system';
  content: string;
  /** a thinking model's reasoning before the reply */
  reasoning_content?: string;
  time: string;
  request_id?: string;
  stats?: ReplyStats;
}

export interface SamplingFields {
  temperature?: number;
  top_p?: number;
  top_k?: number;
  min_p?: number;
  repeat_penalty?: number;
  seed?: number;
  max_tokens?: number;
}

export interface Conversation {
  id: string;
  title: string;
  model?: string;
  system?: string;
  adapters?: AdapterRef[];
  sampling?: SamplingFields;
  created_at: string;
  updated_at: string;
  message_count: number;
  messages?: Message[];
}

export interface LoadedModel {
  name: string;
  path: string;
  architecture: string;
  file_type: string;
  size: number;
  context_length: number;
  active_requests: number;
}

export type State = 'connecting' | 'starting' | 'loading' | 'ready' | 'failed';

export interface Status {
  state: State;
  message: string;
  notice?: string;
  version?: string;
  started: boolean;
  loaded?: LoadedModel[];
  socket: string;
}

export interface AdapterInfo {
  name: string;
  file: string;
  format: string;
  arch?: string;
  base_model?: string;
  rank: number;
  alpha: number;
  targets: string[];
  sha256: string;
  size: number;
  installed_at: string;
}

export interface AdapterInstall {
  path: string;
  name: string;
  state: 'installing' | 'installed' | 'rejected';
  error?: string;
  info?: AdapterInfo;
}

export interface ChatStart {
  conversation_id: string;
  user?: Message;
}
export interface ChatToken {
  conversation_id: string;
  text: string;
  /** a piece of a thinking model's reasoning */
  reasoning?: string;
}
export interface ChatDone {
  conversation_id: string;
  completion_id: string;
  message: Message;
  stats: ReplyStats;
  finish_reason: string;
}
export interface ChatError {
  conversation_id: string;
  error: string;
  stopped: boolean;
  message?: Message;
}

export interface ReplyStat extends ReplyStats {
  conversation_id: string;
  completion_id: string;
  model: string;
  time: string;
}

export interface ModelCache {
  model: string;
  lookups: number;
  hits: number;
  hit_tokens: number;
  miss_tokens: number;
  hit_rate: number;
  evictions: number;
  blocks: number;
  block_tokens: number;
}

export interface Stats {
  replies: ReplyStat[];
  cache: ModelCache[];
  loaded: LoadedModel[];
  memory: number;
  version: string;
  uptime_seconds: number;
}

export interface Feedback {
  id: string;
  learning?: FeedbackLearning;
}

/** What the learning loop did with a feedback (ipc.FeedbackLearning). */
export interface FeedbackLearning {
  status: 'applied' | 'queued' | 'paused' | 'reserved' | 'off' | 'failed';
  feedback_id?: string;
  request_id?: string;
  model?: string;
  scope?: string;
  signal?: string;
  version?: number;
  applied_at?: string;
  latency_ms?: number;
  steps?: number;
  loss_before?: number;
  loss_after?: number;
  error?: string;
}

export interface LearningPoint {
  at: string;
  kind: 'feedback' | 'consolidate' | 'deep' | 'reset' | 'undo';
  signal?: string;
  loss?: number;
  after?: number;
  version?: number;
}

export interface LearningCandidate {
  at: string;
  accepted: boolean;
  reason?: string;
  train: number;
  holdout: number;
  holdout_nll: number;
  current_holdout_nll: number;
  general_ppl?: number;
  current_general_ppl?: number;
  duration_ms: number;
}

export interface LearningScope {
  scope: string;
  model: string;
  paused: boolean;
  version: number;
  received: number;
  applied: number;
  pending: number;
  queued: number;
  unlearned: number;
  /** Stored signals that could not become an example (an empty answer). */
  unlearnable: number;
  steps: number;
  consolidations: number;
  deep_runs: number;
  deep_accepted: number;
  last_update?: string;
  last_loss?: number;
  exchanges: number;
  validation: number;
  trajectories: number;
  adapters: { kind: string; rank: number; params: number }[];
  candidates: LearningCandidate[];
  history: LearningPoint[];
  can_undo: boolean;
}

export interface LearningModel {
  model: string;
  status: 'preparing' | 'ready' | 'unsupported' | 'error';
  error?: string;
  scopes: LearningScope[];
}

export interface LearningStatus {
  enabled: boolean;
  per_app: boolean;
  models: LearningModel[];
}

export type LearningAction = 'pause' | 'resume' | 'reset' | 'undo';

/** Sampling as the Go method SetSampling takes it (app.Sampling). */
export interface Sampling {
  temperature: number | null;
  top_p: number | null;
  top_k: number | null;
  min_p: number | null;
  max_tokens: number;
  seed: number | null;
  repeat_penalty: number;
}

/** Event names (package app). */
export const Events = {
  status: 'daemon:status',
  daemon: 'daemon:event',
  start: 'chat:start',
  token: 'chat:token',
  done: 'chat:done',
  error: 'chat:error',
  install: 'adapter:install',
} as const;
