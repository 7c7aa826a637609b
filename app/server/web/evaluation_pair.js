// One task of two compared runs, its trials side by side (#/evaluations/A/vs/B/tasks/TASK):
// an epoch picked per side, then the two trajectories step by step in the layout a replay
// is shown beside its recording (side_by_side.js).

import { api } from "./api.js";
import { el, clear } from "./dom.js";
import { allEvents, sideBySide } from "./side_by_side.js";
import { verdictBadge } from "./trial.js";

/** The trials of ``task`` in a run's report, by epoch. */
function trialsOf(report, task) {
  return report.tasks.filter((t) => t.id === task).sort((x, y) => x.epoch - y.epoch);
}

export function trialPairView({ main, showError, clearError }, a, b, task) {
  const pair = `#/evaluations/${encodeURIComponent(a)}/vs/${encodeURIComponent(b)}`;
  const pickers = el("div", { class: "epoch-pickers" });
  const body = el("div", { class: "compare-body" }, el("p", { class: "muted", role: "status" }, "Loading both runs' trials…"));
  clear(main).append(
    el("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, el("a", { href: "#/evaluations" }, "Evaluation"), " / ",
      el("a", { href: pair }, `${a.split("@")[0]} vs ${b.split("@")[0]}`), " / ", el("span", {}, task)),
    el("h1", {}, `${task}: A beside B`), pickers, body);
  let closed = false;
  let stepper = null;
  let shown = 0; // the newest draw wins when epochs are changed quickly

  async function draw(left, right) {
    const mine = ++shown;
    stepper?.close();
    stepper = null;
    clear(body).append(el("p", { class: "muted", role: "status" }, "Loading the two trials…"));
    try {
      const [eventsA, eventsB] = await Promise.all([allEvents(left.session_id), allEvents(right.session_id)]);
      if (closed || mine !== shown) return;
      clearError();
      const heading = (which, run, trial) => [`${which} ${run.split("@")[0]} · epoch ${trial.epoch} `,
        verdictBadge(trial.passed || (trial.reason === "not scored" ? null : false)), " ",
        el("a", { href: `#/sessions/${trial.session_id}`, class: "small" }, String(trial.session_id).slice(0, 8))];
      stepper = sideBySide({
        left: { key: "run-a", side: "A", events: eventsA, session: left.session_id, heading: heading("A", a, left),
          list: "Run A's events of this step", missing: "Run A's trial has no such step." },
        right: { key: "run-b", side: "B", events: eventsB, session: right.session_id, heading: heading("B", b, right),
          list: "Run B's events of this step", missing: "Run B's trial has no such step." },
      });
      clear(body).append(
        [left, right].some((t) => t.reason) ? el("ul", { class: "pair-reasons small" },
          [["A", left], ["B", right]].filter(([, t]) => t.reason).map(([which, t]) => el("li", {}, `${which} failed: ${t.reason}`))) : null,
        stepper.node,
        el("p", { class: "muted small" }, "Keys: [ and ] step back and forth. A step starts at a model call; both sides show their own Nth call."));
    } catch (error) {
      if (closed || mine !== shown) return;
      clear(body);
      showError(error);
    }
  }

  Promise.all([a, b].map((run) => api(`/api/evaluations/${encodeURIComponent(run)}/report`))).then(([ra, rb]) => {
    if (closed) return;
    const inA = trialsOf(ra, task);
    const inB = trialsOf(rb, task);
    if (!inA.length || !inB.length) {
      clear(body);
      showError(new Error(`Task ${task} is not in ${inA.length ? "run B" : "run A"}; pick a task both runs have.`));
      return;
    }
    const picker = (id, which, trials) => el("div", { class: "field" }, el("label", { for: id }, `Epoch in ${which}`),
      el("select", { id }, trials.map((t, i) => el("option", { value: i }, `epoch ${t.epoch} · ${t.passed ? "passed" : "failed"}`))));
    const pickA = picker("pair-a", `A (${a.split("@")[0]})`, inA);
    const pickB = picker("pair-b", `B (${b.split("@")[0]})`, inB);
    pickers.replaceChildren(pickA, pickB);
    const selects = [pickA.querySelector("select"), pickB.querySelector("select")];
    const redraw = () => draw(inA[Number(selects[0].value)], inB[Number(selects[1].value)]);
    for (const select of selects) select.addEventListener("change", redraw);
    redraw();
  }).catch((error) => {
    if (closed) return;
    clear(body);
    showError(error);
  });
  return () => {
    closed = true;
    stepper?.close();
  };
}
