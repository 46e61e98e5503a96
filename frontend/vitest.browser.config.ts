import { defineConfig } from 'vitest/config';

// Browser tests: chromium (through playwright-core) drives the built
// frontend served by test/appserver, which bridges to a real ruvllmd.
export default defineConfig({
  test: {
    include: ['test/browser/**/*.test.ts'],
    environment: 'node',
    testTimeout: 90000,
    hookTimeout: 180000,
    fileParallelism: false,
  },
});
