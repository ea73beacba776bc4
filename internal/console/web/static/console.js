// Refreshes the live parts of a page (rendered on the server: a room's
// live view and chart, a migration's progress, the jobs table) every
// data-every seconds (15 if unset) while the page is shown; everything
// else on the console works without script. A part with data-stale-after
// says so once it has not been refreshed for that many seconds (the
// console did not answer), rather than keep showing old figures as live.
(function () {
  "use strict";
  document.querySelectorAll("[data-refresh]").forEach(function (box) {
    var every = parseInt(box.getAttribute("data-every"), 10) || 15;
    var staleAfter = parseInt(box.getAttribute("data-stale-after"), 10);
    var refreshed = Date.now();
    setInterval(function () {
      if (staleAfter && Date.now() - refreshed > staleAfter * 1000 && !box.querySelector(".stale-note")) {
        var note = document.createElement("p");
        note.className = "stale stale-note";
        note.textContent = "Stale: not refreshed since " + new Date(refreshed).toLocaleTimeString() +
          "; the figures below are older than " + staleAfter + " s.";
        box.insertBefore(note, box.firstChild);
      }
      if (document.hidden) {
        return;
      }
      fetch(box.getAttribute("data-refresh"), { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (html) {
            box.innerHTML = html;
            refreshed = Date.now();
          }
        })
        .catch(function () {});
    }, every * 1000);
  });
})();
