// A session that is an evaluation trial, shown as one: its run, task and epoch in the
// breadcrumb (linking the run's report), a pass/fail badge beside its state (a failed trial
// ends "finished" as often as not, which alone reads as a success), and each eval.score as
// "scorer: verdict - explanation". session.js and timeline.js call in here with one line each.

import { el } from "./dom.js";

const VERDICTS = new Set(["pass", "fail", "error"]);

/** The run's report, by the key it is read by. */
export function reportHref(run) {
  return `#/evaluations/${encodeURIComponent(run)}`;
}

/** A trial's verdict as a badge: ✓ passed, ✗ failed, or not scored yet. */
export function verdictBadge(passed, extra = {}) {
  const [kind, text] = passed === true ? ["pass", "✓ passed"] : passed === false ? ["fail", "✗ failed"] : ["unscored", "not scored yet"];
  return el("span", { class: `state verdict verdict-${kind}`, ...extra }, text);
}

/** The timeline item's class of an eval.score (its verdict, or a measure such as cost). */
export function scoreClass(payload) {
  const label = payload.score_label;
  return `score ${VERDICTS.has(label) ? `score-${label}` : "score-measure"}`;
}

/** An eval.score as one line: "scorer: verdict - explanation" (a measure shows its value). */
export function scoreLine(payload) {
  const label = payload.score_label;
  const verdict = VERDICTS.has(label);
  const value = verdict ? label : [payload.score_value ?? "", label ? `(${label})` : ""].filter((part) => part !== "").join(" ");
  return el("p", { class: "score-line" },
    el("strong", { class: "scorer" }, payload.name), ": ",
    el("span", { class: verdict ? `verdict-text verdict-${label}` : "verdict-text" }, String(value)),
    payload.explanation ? ` - ${payload.explanation}` : "",
    payload.scorer_version > 1 ? el("span", { class: "muted small" }, ` (version ${payload.scorer_version})`) : "");
}

/** On the session page, once its summary is known: a trial's breadcrumb and badge. */
export function showTrial(main, summary) {
  const trial = summary.trial;
  if (!trial) return;
  const crumbs = main.querySelector(".crumbs");
  if (crumbs && !crumbs.dataset.trial) {
    crumbs.dataset.trial = "1";
    // the session's own crumb (its id) stays as the session page drew it
    const session = crumbs.lastElementChild || el("span", {}, String(summary.id));
    crumbs.replaceChildren(el("a", { href: "#/evaluations" }, "Evaluation"), " / ",
      el("a", { href: reportHref(trial.run), class: "trial-run" }, trial.name), " / ",
      el("span", { class: "trial-task" }, `${trial.task} · epoch ${trial.epoch}${trial.attempt > 1 ? ` · attempt ${trial.attempt}` : ""}`),
      " / ", session);
  }
  const state = main.querySelector("#session-state");
  if (!state) return;
  const verdicts = Object.entries(trial.verdicts || {}).filter(([, label]) => VERDICTS.has(label));
  const badge = verdictBadge(trial.passed, { id: "trial-verdict",
    title: verdicts.map(([name, label]) => `${name}: ${label}`).join(", ") || "no verdict recorded yet" });
  const shown = main.querySelector("#trial-verdict");
  if (shown) shown.replaceWith(badge);
  else state.after(" ", badge);
}
