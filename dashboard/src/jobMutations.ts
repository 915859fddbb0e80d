// Single-job mutations shared by the table row menu and the job detail (U-25, U-30).
import { reactive } from "vue";
import { idPath, mutate } from "./lib/api";

/** U-25: ids that answered 410 stay disabled for this page's lifetime. */
export const goneJobs = reactive(new Set<string>());

export type JobAction = "retry" | "cancel" | "reschedule";

export async function runJobAction(id: string, action: JobAction, body: unknown = {}): Promise<string> {
  const outcome = await mutate(idPath("/api/jobs", id, `/${action}`), body);
  if (outcome.status === 410) goneJobs.add(id);
  return outcome.message;
}
