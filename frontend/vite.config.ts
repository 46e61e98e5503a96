import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { svelteTesting } from '@testing-library/svelte/vite';

// `vitest run` runs the unit tests (jsdom); the browser tests against
// test/appserver have their own config, vitest.browser.config.ts.
export default defineConfig({
  plugins: [svelte(), process.env.VITEST ? svelteTesting() : null],
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022' },
  test: {
    include: ['test/unit/**/*.test.ts'],
    environment: 'jsdom',
    testTimeout: 20000,
  },
});
