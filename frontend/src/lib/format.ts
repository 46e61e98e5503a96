// Number formatting for the stats view and message footers.

export function bytes(n: number): string {
  if (!Number.isFinite(n) || n <= 0) return '0 B';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n >= 100 || i === 0 ? Math.round(n) : n.toFixed(1)} ${units[i]}`;
}

export function percent(r: number): string {
  if (!Number.isFinite(r)) return '—';
  return `${(r * 100).toFixed(r >= 0.995 || r === 0 ? 0 : 1)}%`;
}

export function ms(v: number): string {
  if (!v) return '—';
  return v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(0)} ms`;
}

export function rate(v: number): string {
  return v ? `${v.toFixed(v >= 100 ? 0 : 1)} tok/s` : '—';
}

export function duration(s: number): string {
  s = Math.floor(s);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

// leftOut is the note under a reply for which the daemon left part of the
// conversation out to fit the model's context ('' when it left nothing).
export function leftOut(s: { dropped_messages?: number; dropped_tokens?: number; context_shifts?: number }): string {
  const notes: string[] = [];
  if (s.dropped_messages) {
    notes.push(`Earlier messages were left out to fit the model's context (${plural(s.dropped_messages, 'message')}, ${plural(s.dropped_tokens ?? 0, 'token')}).`);
  } else if (s.dropped_tokens) {
    notes.push(`The start of the conversation was cut to fit the model's context (${plural(s.dropped_tokens, 'token')}).`);
  }
  if (s.context_shifts) {
    notes.push(`The reply outgrew the context: its oldest part was set aside ${s.context_shifts === 1 ? 'once' : `${s.context_shifts} times`}.`);
  }
  return notes.join(' ');
}
