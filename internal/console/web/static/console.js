// Refreshes the live parts of a page (rendered on the server: a room's
// chart, a migration's progress, the jobs table) every data-every seconds
// (15 if unset) while the page is shown; everything else on the console
// works without script.
(function () {
  "use strict";
  document.querySelectorAll("[data-refresh]").forEach(function (box) {
    var every = parseInt(box.getAttribute("data-every"), 10) || 15;
    setInterval(function () {
      if (document.hidden) {
        return;
      }
      fetch(box.getAttribute("data-refresh"), { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) { if (html) { box.innerHTML = html; } })
        .catch(function () {});
    }, every * 1000);
  });
})();
