// ADR-0091: one self-contained HTML file (U-1), so the Python package ships a single resource.
import vue from "@vitejs/plugin-vue";
import { defineConfig } from "vitest/config";
import { viteSingleFile } from "vite-plugin-singlefile";

export default defineConfig({
  plugins: [vue(), viteSingleFile({ removeViteModuleLoader: true })],
  // `npm run dev` serves the sources with hot reload; API calls go to `tsumugi dev` on its default port.
  server: { proxy: { "/api": "http://127.0.0.1:8787" } },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // Chromium >= 111 and Safari >= 16.4 cover every browser the dashboard supports.
    target: "es2022",
    reportCompressedSize: false,
  },
  test: {
    include: ["tests/**/*.test.ts"],
    environment: "node",
  },
});
