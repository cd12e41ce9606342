// compare.js: a compare page (`jitterlab view A B`, docs/html.md "Compare pages"): B's
// side of the report (compareSide), and the Timelines tab: A's timeline over B's, each
// with its own rows and vertical scroll, on one time axis (each trace's time from its own
// start, as long as the longer trace), zoomed and moved together while "one time axis"
// is ticked, a process of one name in one colour in both. The keys go to the timeline
// the pointer was last over. The tables compare in sections.js (tableOf).
import { el } from "./tables.js";
import { tlModel, tlShareColours } from "./tlmodel.js";

/** B's meta (its title, report and timeline in A's place), from a compare page's meta. */
export function compareSide(meta) {
  const c = meta.compare;
  return { ...meta, title: c.b, report: c.report, timeline: c.timeline ?? null, compare: null };
}

/** The Timelines tab of a compare page: returns { a, b } (each mountTimeline's api). */
export function mountCompareTimelines(root, ctx) {
  const sides = [ctx, ctx.other];
  const end = Math.max(...sides.map((c) => c.meta.timeline?.end ?? 0));
  const link = el("input", { type: "checkbox", checked: true, class: "cmp-link" });
  root.classList.add("cmp");
  root.append(el("div", { class: "cmp-bar" },
    el("label", { title: "zoom and move both timelines together, each from its own trace's start" }, link, " one time axis"),
    el("span", { class: "tl-dim" }, " · keys go to the timeline the pointer was last over")));
  // A process of one name has one colour in both timelines.
  const models = sides.filter((c) => c.lanes).map((c) => tlModel(c));
  if (models.length === 2) tlShareColours(models);
  let keyed = 0;
  let painted = 0;
  const apis = [];
  sides.forEach((c, i) => {
    const name = i ? "B" : "A";
    const box = el("div", { class: "cmp-side", dataset: { side: name.toLowerCase() } });
    const head = el("h2", { class: "cmp-title" }, `${name}: ${c.name}`);
    const body = el("div", { class: "cmp-timeline" });
    box.append(head, body);
    root.append(box);
    box.addEventListener("pointerenter", () => { keyed = i; });
    box.addEventListener("pointerdown", () => { keyed = i; });
    if (!c.lanes) {
      body.append(el("p", { class: "tl-dim" }, c.meta.timeline ? "its timeline's data could not be read" : "a saved result: no timeline"));
      apis.push(null);
      return;
    }
    apis.push(mountTimeline(body, c, {
      name: i ? "timelineB" : "timeline",
      prefix: i ? "b." : "",
      share: 0.34,
      end,
      keyed: () => keyed === i,
      painted: () => {
        const jl = window.jitterlab || (window.jitterlab = {});
        if (++painted === sides.filter((x) => x.lanes).length && jl.painted == null) {
          jl.painted = performance.now();
          performance.mark("jl:painted");
        }
      },
      onView: (t0, t1) => {
        const other = apis[1 - i];
        if (link.checked && other) other.follow(t0, t1);
      },
    }));
  });
  link.addEventListener("change", () => {
    if (link.checked && apis[0] && apis[1]) apis[1].follow(apis[0].view.t0, apis[0].view.t1);
  });
  const [a, b] = apis;
  return {
    a, b,
    get linked() {
      return link.checked;
    },
    /** Side `i`'s timeline (0: A, 1: B), for the shell's openTimeline. */
    side: (i) => apis[i],
  };
}
