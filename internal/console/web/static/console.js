// Refreshes a room's chart (rendered on the server) every 15 seconds while
// the page is shown; everything else on the console works without script.
(function () {
  "use strict";
  var box = document.querySelector("[data-refresh]");
  if (!box) {
    return;
  }
  setInterval(function () {
    if (document.hidden) {
      return;
    }
    fetch(box.getAttribute("data-refresh"), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html) { box.innerHTML = html; } })
      .catch(function () {});
  }, 15000);
})();
