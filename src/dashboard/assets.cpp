// The dashboard's only assets, served by tandem itself (the machines it runs on have no internet).

#include "dashboard/pages.hpp"

namespace tandem::dashboard {

const std::string_view k_stylesheet = R"css(:root {
  --bg: #ffffff; --fg: #1d2125; --muted: #5d6770; --line: #d8dde2; --head: #f3f5f7; --link: #0b5cad;
  --ok: #1a7f37; --bad: #c62828; --run: #0b5cad; --wait: #9a6700; --off: #6e7781;
}
@media (prefers-color-scheme: dark) {
  :root { --bg: #111418; --fg: #e3e7eb; --muted: #9aa4ad; --line: #2c333a; --head: #1a1f24; --link: #6cb6ff;
          --ok: #57c26b; --bad: #ff7b72; --run: #6cb6ff; --wait: #d6a93a; --off: #8b949e; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
header { display: flex; gap: 1.5rem; align-items: baseline; padding: .6rem 1.2rem;
         border-bottom: 1px solid var(--line); background: var(--head); }
header nav a { margin-right: 1rem; }
.brand { font-weight: 700; color: var(--fg); text-decoration: none; }
a { color: var(--link); }
a[aria-current] { font-weight: 700; text-decoration: none; color: var(--fg); }
main { padding: .8rem 1.2rem 2rem; max-width: 1400px; }
h1 { font-size: 1.3rem; margin: .4rem 0; }
h2 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
.muted, .taken { color: var(--muted); font-weight: 400; }
.counts { margin: .2rem 0; }
table { border-collapse: collapse; width: 100%; margin: .3rem 0; }
th, td { text-align: left; padding: .25rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
thead th { font-size: .78rem; letter-spacing: .03em; color: var(--muted); background: var(--head); }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.reason { color: var(--muted); max-width: 32rem; overflow-wrap: anywhere; }
td.empty { color: var(--muted); text-align: center; padding: 1rem; }
tr.member td:first-child, tr.rank td:first-child { opacity: .75; }
.indent { padding-left: 1.4rem; }
.tag { font-size: .72rem; border: 1px solid var(--line); border-radius: .6rem; padding: 0 .4rem; color: var(--muted); }
table.facts { width: auto; }
table.facts th { font-weight: 600; color: var(--muted); padding-right: 1.5rem; }
.st { font-weight: 600; white-space: nowrap; }
.st-succeeded, .st-ready { color: var(--ok); }
.st-failed, .st-not_ready, .st-gone { color: var(--bad); }
.st-running { color: var(--run); }
.st-pending, .st-starting, .st-updating { color: var(--wait); }
.st-cancelled, .st-unknown, .st-no_replicas { color: var(--off); }
form.filter { display: flex; flex-wrap: wrap; gap: .8rem; align-items: center; margin: .6rem 0; }
select, input, button { font: inherit; color: inherit; background: var(--bg); border: 1px solid var(--line);
                        border-radius: 4px; padding: .15rem .4rem; }
button { cursor: pointer; }
pre { background: var(--head); border: 1px solid var(--line); border-radius: 4px; padding: .6rem;
      overflow: auto; font: 12.5px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
pre.log { max-height: 70vh; white-space: pre-wrap; overflow-wrap: anywhere; }
meter { width: 12rem; height: 1rem; }
.problem, .problems { color: var(--bad); }
details.cancel { margin: .4rem 0 .8rem; }
details.cancel button { border-color: var(--bad); color: var(--bad); }
)css";

// Progressive enhancement only: the pages are whole without it.
const std::string_view k_script = R"js("use strict";
(function () {
  var body = document.body;
  // The job list: its rows again every data-poll seconds (the server refreshes the clusters once for all
  // open pages; this only reads what it holds). Paused while the tab is hidden.
  var poll = parseInt(body.getAttribute("data-poll") || "0", 10);
  var rows = document.getElementById("rows");
  if (poll > 0 && rows) {
    setInterval(function () {
      if (document.hidden) return;
      fetch("/rows" + location.search, { credentials: "same-origin", cache: "no-store" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (j) {
          if (!j) return;
          rows.innerHTML = j.rows; // rendered and escaped by the server
          var taken = document.getElementById("taken");
          if (taken) taken.textContent = j.taken;
        })
        .catch(function () {});
    }, poll * 1000);
  }
  // A running job's log: followed through server-sent events, each event one chunk of text.
  var log = document.getElementById("log");
  var stream = log && log.getAttribute("data-stream");
  if (stream && window.EventSource) {
    var state = document.getElementById("log-state");
    var es = new EventSource(stream);
    var first = true;
    es.onmessage = function (e) {
      if (first) { log.textContent = ""; first = false; }
      var atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
      log.textContent += JSON.parse(e.data);
      if (atBottom) log.scrollTop = log.scrollHeight;
    };
    es.addEventListener("end", function (e) {
      es.close();
      if (state) state.textContent = JSON.parse(e.data);
      setTimeout(function () { location.reload(); }, 1500);
    });
    es.onerror = function () {
      es.close();
      if (state) state.textContent = "The log stream stopped; reload to follow it again.";
    };
  } else {
    // A job page without a stream still moves on while the job runs.
    var reload = parseInt(body.getAttribute("data-reload") || "0", 10);
    if (reload > 0) setTimeout(function () { location.reload(); }, reload * 1000);
  }
})();
)js";

} // namespace tandem::dashboard
