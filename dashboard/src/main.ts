import { createApp } from "vue";
import App from "./App.vue";
import { ui } from "./store";
import "./style.css";

declare global {
  interface Window {
    __TSUMUGI__?: { tokenCookie: string | null };
  }
}

// U-2: the server injects the cookie name; without an injection the port's default name is used
// (ADR-0092), and an explicit null means "no token prompt" (U-6).
const injected = window.__TSUMUGI__;
ui.tokenCookie = injected === undefined ? "tsumugi_token" : injected.tokenCookie;

createApp(App).mount("#app");
