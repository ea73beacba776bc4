// Progressive enhancement for the library pages: live search on the index
// page (through the public /libraries API) and Copy buttons for the tags.
(function () {
  "use strict";

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text) node.textContent = text;
    return node;
  }

  function renderResults(list, status, query, data) {
    list.textContent = "";
    data.results.forEach(function (lib) {
      var item = el("li", "library");
      var link = el("a", "name", lib.name);
      link.href = "/browse/" + encodeURIComponent(lib.name);
      item.appendChild(link);
      if (lib.version) item.appendChild(el("span", "version", lib.version));
      if (lib.description) item.appendChild(el("p", "description", lib.description));
      list.appendChild(item);
    });
    if (data.results.length === 0) list.appendChild(el("li", "empty", "No library matches."));
    status.textContent = query ? data.total + " results for \u201c" + query + "\u201d" : "";
    list.setAttribute("data-query", query);
  }

  function setupSearch() {
    var input = document.getElementById("search");
    var list = document.getElementById("libraries");
    var status = document.getElementById("status");
    if (!input || !list || !status) return;
    var timer = null;
    var latest = 0; // only the newest request may render
    input.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        var query = input.value.trim();
        var seq = ++latest;
        var url = "/libraries?fields=version,description&limit=100";
        if (query) url += "&search=" + encodeURIComponent(query);
        fetch(url, { headers: { Accept: "application/json" } })
          .then(function (resp) {
            if (!resp.ok) throw new Error("search failed: HTTP " + resp.status);
            return resp.json();
          })
          .then(function (data) {
            if (seq !== latest) return;
            renderResults(list, status, query, data);
            var params = query ? "?q=" + encodeURIComponent(query) : location.pathname;
            history.replaceState(null, "", params);
          })
          .catch(function (err) {
            if (seq === latest) status.textContent = err.message;
          });
      }, 120);
    });
  }

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    // Plain-http pages have no Clipboard API: copy through a selection.
    var area = el("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var ok = document.execCommand("copy");
    document.body.removeChild(area);
    return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  function setupCopy() {
    document.addEventListener("click", function (event) {
      var button = event.target.closest("button[data-copy]");
      if (!button) return;
      var source = document.getElementById(button.getAttribute("data-copy"));
      if (!source) return;
      var label = button.textContent;
      copyText(source.textContent).then(
        function () {
          button.textContent = "Copied!";
          button.classList.add("copied");
        },
        function () {
          button.textContent = "Select and copy";
        }
      ).then(function () {
        setTimeout(function () {
          button.textContent = label;
          button.classList.remove("copied");
        }, 1500);
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    setupSearch();
    setupCopy();
  });
})();
