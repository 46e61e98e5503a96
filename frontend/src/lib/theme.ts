// Light and dark themes: the user's choice is kept in localStorage,
// otherwise the system preference decides.
export type Theme = 'light' | 'dark';

const key = 'ruvllm.theme';

export function initialTheme(storage: Storage = localStorage, mq = window.matchMedia?.bind(window)): Theme {
  const saved = storage.getItem(key);
  if (saved === 'light' || saved === 'dark') return saved;
  return mq?.('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export function applyTheme(t: Theme, storage: Storage = localStorage, root = document.documentElement) {
  root.dataset.theme = t;
  storage.setItem(key, t);
}
