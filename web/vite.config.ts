/// <reference types="vitest/config" />
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// `npm run dev` serves the sources on :5173 and sends API calls to `./dev serve` on :8283
// (same origin for the browser, so the refresh cookie and the local-mode guard both work).
const api = "http://127.0.0.1:8283";
const apiPaths = ["/agents", "/conversations", "/settings", "/auth", "/runs", "/health", "/users"];

export default defineConfig({
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false },
  server: {
    proxy: Object.fromEntries(
      apiPaths.map((p) => [p, { target: api, bypass: (req) => (req.headers.accept?.includes("text/html") ? "/index.html" : undefined) }]),
    ),
  },
  // One jsdom per worker, not per file: building it was 11 of the 14 s the tests took. Each
  // test cleans up what it changes (rendered trees, stubbed fetch, fake timers).
  test: { environment: "jsdom", include: ["src/**/*.test.{ts,tsx}"], isolate: false },
});
