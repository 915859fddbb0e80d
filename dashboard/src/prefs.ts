// Browser-kept preferences (U-13, U-23), read once at start and written on change.
import { reactive, watch } from "vue";
import {
  COLUMNS_KEY,
  type ColumnVisibility,
  parseColumns,
  parseRefresh,
  REFRESH_KEY,
  readSetting,
  writeSetting,
} from "./lib/settings";

const store = typeof localStorage === "undefined" ? undefined : localStorage;

export const prefs = reactive({
  refreshMs: parseRefresh(readSetting(store, REFRESH_KEY)),
  columns: parseColumns(readSetting(store, COLUMNS_KEY)) as ColumnVisibility,
});

watch(
  () => prefs.refreshMs,
  (ms) => writeSetting(store, REFRESH_KEY, String(ms)),
);
watch(
  () => ({ ...prefs.columns }),
  (columns) => writeSetting(store, COLUMNS_KEY, JSON.stringify(columns)),
);
