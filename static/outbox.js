// The offline outbox: meals saved on this device while the network was
// down or an upload failed, kept in IndexedDB (fields, the photo already
// made small by upload.js, the time chosen) with an idempotency key chosen
// here, so that the server creates each meal once however often it is
// sent. Each entry is bound to the user hash it was queued under and is
// sent only while that user is signed in. Loaded by every owner page
// (badge, sending on load and on "online", sign-out) and by the service
// worker (Background Sync).
(function (g) {
  "use strict";
  var DB = "ndiro", STORE = "outbox";

  function open() {
    return new Promise(function (resolve, reject) {
      var req = g.indexedDB.open(DB, 1);
      req.onupgradeneeded = function () { req.result.createObjectStore(STORE, { keyPath: "id" }); };
      req.onsuccess = function () { resolve(req.result); };
      req.onerror = function () { reject(req.error); };
    });
  }

  // run calls fn(store) in one transaction and resolves to what fn's
  // request gave, once the transaction is done.
  function run(mode, fn) {
    return open().then(function (db) {
      return new Promise(function (resolve, reject) {
        var tx = db.transaction(STORE, mode), out;
        var req = fn(tx.objectStore(STORE));
        if (req) req.onsuccess = function () { out = req.result; };
        tx.oncomplete = function () { db.close(); resolve(out); };
        tx.onerror = tx.onabort = function () { db.close(); reject(tx.error); };
      });
    });
  }

  function all() {
    return run("readonly", function (s) { return s.getAll(); }).then(function (es) {
      return (es || []).sort(function (a, b) { return a.queuedAt - b.queuedAt; });
    });
  }
  function get(id) { return run("readonly", function (s) { return s.get(id); }); }
  function put(e) { return run("readwrite", function (s) { return s.put(e); }); }
  function remove(id) { return run("readwrite", function (s) { return s.delete(id); }); }
  function clear() { return run("readwrite", function (s) { return s.clear(); }); }

  // newKey is 128 random bits in base64url: 22 characters, within the
  // server's 16 to 64 of [A-Za-z0-9_-].
  function newKey() {
    var b = new Uint8Array(16);
    g.crypto.getRandomValues(b);
    var s = "";
    for (var i = 0; i < b.length; i++) s += String.fromCharCode(b[i]);
    return g.btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  // queue keeps the meal of fd (a FormData as upload.js would send it,
  // its photo already the small copy, "idem" set) for user.
  function queue(fd, user) {
    var e = { id: fd.get("idem") || newKey(), user: user, fields: [], photo: null, photoName: "",
      queuedAt: Date.now(), state: "waiting", message: "" };
    fd.forEach(function (v, k) {
      if (k === "photo") {
        if (v && v.size) { e.photo = v; e.photoName = v.name || "photo.jpg"; }
      } else if (k !== "idem") {
        e.fields.push([k, String(v)]);
      }
    });
    return put(e).then(function () { return e; });
  }

  function field(e, name) {
    for (var i = 0; i < e.fields.length; i++) if (e.fields[i][0] === name) return e.fields[i][1];
    return "";
  }

  // messageOf finds what a refusal page says is wrong: the photo's
  // message, a field's, the form's, else the page's first paragraph.
  function messageOf(html, status) {
    var pick = [/id="photo-err"[^>]*>([^<]+)</, /class="field-err"[^>]*>([^<]+)</, /id="form-err"[^>]*>([^<]+)</, /<main[^>]*>[\s\S]*?<p[^>]*>([^<]+)</];
    for (var i = 0; i < pick.length; i++) {
      var m = pick[i].exec(html);
      if (m && m[1].trim()) return unescapeHTML(m[1].trim());
    }
    return "The server refused this meal (status " + status + ").";
  }

  function unescapeHTML(s) {
    return s.replace(/&#39;/g, "'").replace(/&#34;/g, '"').replace(/&quot;/g, '"').replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  }

  // send posts one entry as the page script posts a meal of a batch
  // (X-Ndiro-Upload: 2: JSON rather than a redirect, no flash) and
  // resolves to {ok}, {signin}, {later} (409 already being saved, 429,
  // 503, 507) or {refused: message}, with reused set when its key made
  // another meal (422 with X-Ndiro-Idem: reused); it rejects without
  // network.
  function send(e) {
    var fd = new FormData();
    e.fields.forEach(function (kv) { fd.append(kv[0], kv[1]); });
    fd.set("idem", e.id);
    if (e.photo) fd.append("photo", e.photo, e.photoName || "photo.jpg");
    return fetch("/meals", { method: "POST", body: fd, credentials: "same-origin", redirect: "manual",
      headers: { "X-Ndiro-Upload": "2" } }).then(function (resp) {
      if (resp.type === "opaqueredirect") return { signin: "/login" };
      return resp.text().then(function (body) {
        var json = null;
        try { json = JSON.parse(body); } catch (err) {}
        if (resp.status === 200 && json && json.location) return { ok: json.location };
        if (resp.status === 401) return { signin: (json && json.signin) || "/login" };
        if ([409, 429, 503, 507].indexOf(resp.status) >= 0) return { later: true };
        return { refused: messageOf(body, resp.status), reused: resp.headers.get("X-Ndiro-Idem") === "reused" };
      });
    });
  }

  var flushing = null;

  // flush sends every waiting entry of user, oldest first, one at a time;
  // it stops at the first without network. A sign-in asked for marks the
  // entries so (the page says to sign in, then goes on); a refusal keeps
  // the entry, its photo and its message, and it is not sent again until
  // the person fixes it. An entry refused because its key made another
  // meal moves to a new key, so that fixing it adds it as a meal of its
  // own. One flush at a time per context; the server's idempotency keys
  // cover a page and the worker at once.
  function flush(user) {
    if (flushing) return flushing;
    flushing = all().then(function (es) {
      var mine = es.filter(function (e) { return e.user === user && e.state !== "refused"; });
      var i = 0;
      function next() {
        if (i >= mine.length) return;
        var e = mine[i++];
        return send(e).then(function (r) {
          if (r.ok) return remove(e.id).then(next);
          if (r.later) { e.state = "waiting"; e.message = ""; return put(e).then(next); }
          if (r.signin) {
            return Promise.all(mine.slice(i - 1).map(function (x) { x.state = "signin"; return put(x); }));
          }
          e.state = "refused";
          e.message = r.refused;
          if (!r.reused) return put(e).then(next);
          var old = e.id;
          e.id = newKey();
          return put(e).then(function () { return remove(old); }).then(next);
        }, function () { /* offline: the rest waits */ });
      }
      return next();
    }).then(function () { flushing = null; }, function (err) { flushing = null; throw err; });
    return flushing;
  }

  g.NdiroOutbox = { all: all, get: get, put: put, remove: remove, clear: clear, queue: queue,
    newKey: newKey, send: send, flush: flush, field: field };

  if (typeof document === "undefined") return; // the service worker

  // ---- Pages -------------------------------------------------------------

  function userHash() {
    var m = document.querySelector('meta[name="ndiro-user"]');
    return m ? m.content : "";
  }

  function plural(n, one, many) { return n + " " + (n === 1 ? one : many); }

  function render() {
    var user = userHash();
    return all().then(function (es) {
      var mine = es.filter(function (e) { return e.user === user; });
      var others = es.filter(function (e) { return e.user !== user; });
      var badge = document.getElementById("outbox-badge");
      if (badge) {
        badge.hidden = mine.length === 0;
        badge.textContent = plural(mine.length, "meal", "meals") + " waiting to upload";
      }
      var box = document.getElementById("outbox");
      if (!box) return;
      box.hidden = es.length === 0;
      var signin = mine.some(function (e) { return e.state === "signin"; });
      var summary = box.querySelector(".outbox-summary");
      summary.textContent = "";
      summary.appendChild(document.createTextNode(mine.length ? plural(mine.length, "meal is", "meals are") +
        " saved on this device and upload by themselves when there is a connection." : ""));
      if (signin) {
        var a = document.createElement("a");
        a.href = "/login?next=" + encodeURIComponent("/meals/new");
        a.textContent = "Sign in to send them";
        a.className = "outbox-signin";
        summary.appendChild(document.createTextNode(" Your session ended: "));
        summary.appendChild(a);
        summary.appendChild(document.createTextNode(", then they go on."));
      }
      var list = box.querySelector(".outbox-list");
      list.textContent = "";
      mine.forEach(function (e) { list.appendChild(item(e)); });
      var o = box.querySelector(".outbox-others");
      o.hidden = others.length === 0;
      o.querySelector(".outbox-others-text").textContent = plural(others.length, "meal was", "meals were") +
        " saved on this device while another account was signed in; " + (others.length === 1 ? "it is" : "they are") +
        " not sent from this one unless you say so.";
      box.querySelector(".outbox-send").hidden = mine.length === 0;
    });
  }

  function item(e) {
    var li = document.createElement("li");
    li.className = "outbox-item " + e.state;
    li.dataset.id = e.id;
    var when = field(e, "date") + " " + field(e, "time");
    var what = field(e, "kind") || "meal";
    var text = document.createElement("p");
    text.className = "outbox-what";
    text.textContent = what + ", " + when + (field(e, "notes") ? ": " + field(e, "notes") : "") + (e.photo ? " (with photo)" : "");
    li.appendChild(text);
    var state = document.createElement("p");
    state.className = "outbox-state small";
    state.textContent = e.state === "refused" ? "Not saved: " + e.message : e.state === "signin" ? "Waiting for you to sign in." : "Waiting to upload.";
    li.appendChild(state);
    if (e.state === "refused") {
      var fix = document.createElement("a");
      fix.className = "button secondary outbox-fix";
      fix.href = "/meals/new?outbox=" + encodeURIComponent(e.id);
      fix.textContent = "Fix";
      li.appendChild(fix);
    }
    var drop = document.createElement("button");
    drop.type = "button";
    drop.className = "danger outbox-discard";
    drop.textContent = "Discard";
    drop.addEventListener("click", function () {
      if (!window.confirm("Discard this meal? It was never uploaded, so it will be gone.")) return;
      remove(e.id).then(render);
    });
    li.appendChild(drop);
    return li;
  }

  function sendNow() {
    var user = userHash();
    if (!user) return Promise.resolve();
    return all().then(function (es) {
      // A session that came back: entries waiting for it go again.
      return Promise.all(es.filter(function (e) { return e.user === user && e.state === "signin"; })
        .map(function (e) { e.state = "waiting"; return put(e); }));
    }).then(function () { return flush(user); }).then(render, render);
  }

  // prefill opens the Add form on a refused entry (?outbox=id): its
  // fields, its photo, its key; a save then replaces the entry.
  function prefill(form) {
    var id = new URLSearchParams(location.search).get("outbox");
    if (!id) return;
    get(id).then(function (e) {
      if (!e || e.user !== userHash()) return;
      e.fields.forEach(function (kv) {
        var els = form.querySelectorAll('[name="' + kv[0] + '"]');
        els.forEach(function (el) {
          if (el.type === "radio" || el.type === "checkbox") el.checked = el.value === kv[1];
          else if (el.type !== "file") el.value = kv[1];
        });
      });
      form.querySelector('input[name="idem"]').value = e.id;
      if (e.photo && window.DataTransfer) {
        var dt = new DataTransfer();
        dt.items.add(new File([e.photo], e.photoName || "photo.jpg", { type: e.photo.type || "image/jpeg" }));
        var input = form.querySelector("#photo");
        input.files = dt.files;
        var preview = form.querySelector("img.preview");
        if (preview) { preview.src = URL.createObjectURL(e.photo); preview.hidden = false; }
      }
      var note = document.createElement("p");
      note.className = "form-err";
      note.id = "outbox-fix";
      note.setAttribute("role", "alert");
      note.textContent = "This meal was not saved: " + (e.message || "the server refused it") + " Change what is needed, then Save.";
      form.insertAdjacentElement("beforebegin", note);
    });
  }

  // Sign-out: the outbox and this account's pages go with the session.
  // With meals waiting it says how many and asks first.
  function initSignOut(form) {
    form.addEventListener("submit", function (ev) {
      if (form.dataset.cleared) return;
      ev.preventDefault();
      var user = userHash();
      all().then(function (es) {
        var n = es.filter(function (e) { return e.user === user; }).length;
        if (n && !window.confirm(plural(n, "meal is", "meals are") + " waiting to upload on this device. Signing out discards " +
          (n === 1 ? "it" : "them") + ". Sign out anyway?")) return;
        return clear().then(forgetPages).then(function () {
          var f = form.querySelector('input[name="outbox"]');
          if (f) f.value = "empty";
          form.dataset.cleared = "1";
          form.submit();
        });
      }).catch(function () { form.dataset.cleared = "1"; form.submit(); });
    });
  }

  function forgetPages() {
    if (!window.caches) return Promise.resolve();
    return caches.keys().then(function (names) {
      return Promise.all(names.filter(function (n) { return n.indexOf("ndiro-pages-") === 0; })
        .map(function (n) { return caches.delete(n); }));
    });
  }

  function registerWorker(user) {
    if (!("serviceWorker" in navigator)) return;
    navigator.serviceWorker.register("/sw.js", { scope: "/" }).then(function () {
      return navigator.serviceWorker.ready;
    }).then(function (reg) {
      if (user && reg.active) {
        var urls = [].slice.call(document.querySelectorAll('link[rel="stylesheet"], script[src], link[rel="icon"], link[rel="manifest"]'))
          .map(function (el) { return el.getAttribute("href") || el.getAttribute("src"); })
          .filter(function (u) { return u && u.indexOf("/static/") === 0; });
        reg.active.postMessage({ type: "warm", user: user, urls: urls });
      }
    }).catch(function () {});
    navigator.serviceWorker.addEventListener("message", function (ev) {
      if (ev.data && ev.data.type === "outbox-changed") render();
    });
  }

  // askSync asks for Background Sync where the browser has it; elsewhere
  // the next visit and "online" send.
  function askSync() {
    if (!("serviceWorker" in navigator)) return;
    navigator.serviceWorker.ready.then(function (reg) {
      if (reg.sync) return reg.sync.register("ndiro-outbox");
    }).catch(function () {});
  }

  function init() {
    var user = userHash();
    document.querySelectorAll('form[action="/logout"]').forEach(initSignOut);
    if (document.body.dataset.page === "account/deleted") {
      forgetPages();
      if (navigator.serviceWorker && navigator.serviceWorker.controller) navigator.serviceWorker.controller.postMessage({ type: "forget" });
    }
    registerWorker(user);
    if (!window.indexedDB) return;
    var box = document.getElementById("outbox");
    if (box) {
      box.querySelector(".outbox-send").addEventListener("click", sendNow);
      box.querySelector(".outbox-adopt").addEventListener("click", function () {
        all().then(function (es) {
          return Promise.all(es.filter(function (e) { return e.user !== user; }).map(function (e) { e.user = user; e.state = "waiting"; return put(e); }));
        }).then(sendNow);
      });
      box.querySelector(".outbox-drop-others").addEventListener("click", function () {
        all().then(function (es) {
          var others = es.filter(function (e) { return e.user !== user; });
          if (!window.confirm("Discard " + plural(others.length, "meal", "meals") + " saved under another account? They were never uploaded.")) return;
          return Promise.all(others.map(function (e) { return remove(e.id); }));
        }).then(render);
      });
      var form = document.querySelector('form.meal-form[action="/meals"]');
      if (form) prefill(form);
    }
    window.addEventListener("online", sendNow);
    document.addEventListener("ndiro-outbox", function () { askSync(); render(); });
    if (user) sendNow(); else render();
  }

  g.NdiroOutbox.render = render;
  g.NdiroOutbox.user = userHash;
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})(self);
