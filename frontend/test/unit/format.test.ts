import { describe, expect, it } from 'vitest';
import { bytes, duration, leftOut, ms, percent, rate } from '../../src/lib/format';

describe('format', () => {
  it.each([
    [0, '0 B'],
    [512, '512 B'],
    [1536, '1.5 KiB'],
    [20 * 1024 * 1024, '20.0 MiB'],
    [300 * 1024 * 1024, '300 MiB'],
  ])('bytes(%d) = %s', (n, want) => expect(bytes(n)).toBe(want));

  it('formats rates, times and percentages', () => {
    expect(percent(0.4567)).toBe('45.7%');
    expect(percent(1)).toBe('100%');
    expect(percent(0)).toBe('0%');
    expect(ms(0)).toBe('—');
    expect(ms(12.4)).toBe('12 ms');
    expect(ms(1500)).toBe('1.50 s');
    expect(rate(42.25)).toBe('42.3 tok/s');
    expect(rate(4411.7)).toBe('4412 tok/s');
    expect(duration(59)).toBe('59s');
    expect(duration(61)).toBe('1m 1s');
    expect(duration(7322)).toBe('2h 2m');
  });

  it.each([
    [{}, ''],
    [{ dropped_messages: 0, dropped_tokens: 0, context_shifts: 0 }, ''],
    [{ dropped_messages: 4, dropped_tokens: 312 }, "Earlier messages were left out to fit the model's context (4 messages, 312 tokens)."],
    [{ dropped_tokens: 1 }, "The start of the conversation was cut to fit the model's context (1 token)."],
    [{ dropped_messages: 2, dropped_tokens: 40, context_shifts: 3 },
      "Earlier messages were left out to fit the model's context (2 messages, 40 tokens). The reply outgrew the context: its oldest part was set aside 3 times."],
    [{ context_shifts: 1 }, 'The reply outgrew the context: its oldest part was set aside once.'],
  ])('leftOut(%j)', (s, want) => expect(leftOut(s)).toBe(want));
});
