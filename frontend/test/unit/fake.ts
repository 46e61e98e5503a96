// A Transport that records calls and lets a test emit events, standing in
// for the Go side in component tests.
import type { Handler, Transport } from '../../src/lib/api';

export class FakeTransport implements Transport {
  calls: { method: string; args: unknown[] }[] = [];
  handlers = new Map<string, Set<Handler>>();
  results: Record<string, (...args: any[]) => unknown> = {};

  call(method: string, args: unknown[]): Promise<any> {
    this.calls.push({ method, args });
    const f = this.results[method];
    if (!f) return Promise.reject(new Error(`unexpected call ${method}`));
    try {
      return Promise.resolve(f(...args));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  on(event: string, h: Handler) {
    if (!this.handlers.has(event)) this.handlers.set(event, new Set());
    this.handlers.get(event)!.add(h);
    return () => this.handlers.get(event)!.delete(h);
  }

  emit(event: string, data: unknown) {
    this.handlers.get(event)?.forEach((h) => h(data));
  }

  called(method: string) {
    return this.calls.filter((c) => c.method === method);
  }
}
