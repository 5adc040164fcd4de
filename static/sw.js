// ndiro's service worker, served at /sw.js so that its scope is the whole
// app. It keeps the app shell (styles, scripts, icons) and the owner pages
// the person viewed, each person's pages in a cache of their own named by
// their user hash (the X-Ndiro-User header, never an ID or e-mail), and
// shows them when the network is gone. Share links, sign-in, photos and
// every request but GET pass straight through. It sends the offline
// outbox (static/outbox.js) on Background Sync where the browser has it.
"use strict";
importScripts("/static/outbox.js");

var SHELL = "ndiro-shell-v1";
var PAGES = "ndiro-pages-"; // + user hash
var META = "ndiro-meta";
var USER_KEY = "/__ndiro/user";

// Paths never answered here: recipients' links, sign-in and its callback,
// photos (the app's own cache and ETags serve them), sign-out, the page
// after an account deletion.
var PASS = /^\/(s\/|login|auth\/|photo\/|logout|healthz|sw\.js|manifest\.webmanifest|account\/deleted)/;

// Owner pages kept for offline use (navigations only).
var OWNER = /^\/(meals|shares|account(?!\/deleted)|admin)(\/|$|\?)/;

self.addEventListener("install", function () { self.skipWaiting(); });

self.addEventListener("activate", function (e) {
  e.waitUntil(caches.keys().then(function (names) {
    return Promise.all(names.filter(function (n) {
      return n.indexOf("ndiro-shell-") === 0 && n !== SHELL;
    }).map(function (n) { return caches.delete(n); }));
  }).then(function () { return self.clients.claim(); }));
});

// The user the last owner page was for ("" for nobody), so that offline
// only their cache is read.
function currentUser() {
  return caches.open(META).then(function (c) { return c.match(USER_KEY); })
    .then(function (r) { return r ? r.text() : ""; });
}

function setUser(hash) {
  return caches.open(META).then(function (c) { return c.put(USER_KEY, new Response(hash)); });
}

// forget deletes every person's page cache and the current user: a
// sign-out, a sign-in page, a deleted account.
function forget() {
  return caches.keys().then(function (names) {
    return Promise.all(names.filter(function (n) { return n.indexOf(PAGES) === 0; })
      .map(function (n) { return caches.delete(n); }));
  }).then(function () { return setUser(""); });
}

self.addEventListener("fetch", function (e) {
  var req = e.request;
  if (req.method !== "GET") return;
  var url = new URL(req.url);
  if (url.origin !== self.location.origin) return;
  if (PASS.test(url.pathname)) {
    // A sign-in page means the session is over (signed out, expired,
    // disabled, deleted): what was kept for the last person goes.
    if (req.mode === "navigate" && /^\/(login|account\/deleted)/.test(url.pathname)) e.waitUntil(forget());
    return;
  }
  if (url.pathname.indexOf("/static/") === 0) {
    e.respondWith(shell(req));
    return;
  }
  if (req.mode === "navigate" && (OWNER.test(url.pathname + url.search) || url.pathname === "/")) {
    e.respondWith(page(e, req, url));
  }
});

// shell answers a static file from the cache, else the network (keeping
// it): their URLs carry a digest, so a kept copy is never stale.
function shell(req) {
  return caches.open(SHELL).then(function (c) {
    return c.match(req).then(function (hit) {
      return hit || fetch(req).then(function (resp) {
        if (resp.ok && new URL(req.url).searchParams.get("v")) c.put(req, resp.clone());
        return resp;
      });
    });
  });
}

// page answers an owner page from the network, keeping a copy in the
// signed-in person's cache; without network, their copy with a note, or
// the offline page.
function page(e, req, url) {
  return fetch(req).then(function (resp) {
    if (resp.type === "opaqueredirect" || !resp.ok) return resp;
    var hash = resp.headers.get("X-Ndiro-User") || "";
    if (!hash) {
      e.waitUntil(forget());
      return resp;
    }
    var copy = resp.clone();
    e.waitUntil(setUser(hash).then(function () {
      return caches.open(PAGES + hash);
    }).then(function (c) { return c.put(cacheKey(url), copy); }));
    return resp;
  }, function () {
    return currentUser().then(function (hash) {
      if (!hash) return offlinePage(url);
      return caches.open(PAGES + hash).then(function (c) {
        return c.match(cacheKey(url)).then(function (hit) {
          if (!hit && url.pathname === "/meals/new") return c.match("/meals/new");
          if (!hit && url.pathname === "/") return c.match("/meals"); // the installed app's start
          return hit;
        });
      }).then(function (hit) { return hit ? withNote(hit) : offlinePage(url); });
    });
  });
}

// cacheKey is the URL a page is kept under: its path and query, without
// the fragment.
function cacheKey(url) { return url.pathname + url.search; }

var NOTE = '<p class="offline-note" role="status" id="offline-note">You are offline: showing what you saw last.</p>';

function withNote(resp) {
  return resp.text().then(function (html) {
    html = html.replace(/(<main[^>]*>)/, "$1" + NOTE);
    return new Response(html, { status: 200, headers: { "Content-Type": "text/html; charset=utf-8" } });
  });
}

function offlinePage(url) {
  return caches.open(SHELL).then(function (c) { return c.keys(); }).then(function (keys) {
    var css = "";
    keys.forEach(function (k) { if (/\/static\/app\.css\?/.test(k.url)) css = new URL(k.url).pathname + new URL(k.url).search; });
    return currentUser().then(function (hash) {
      return hash ? caches.open(PAGES + hash).then(function (c) { return c.match("/meals/new"); }) : null;
    }).then(function (add) {
      var html = '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
        '<meta name="viewport" content="width=device-width, initial-scale=1">' +
        (css ? '<link rel="stylesheet" href="' + css + '">' : "") +
        "<title>Offline · ndiro</title></head><body data-page=\"offline\"><main id=\"main\">" +
        '<h1>You are offline</h1><p id="offline-page">This page was not saved on this device, so it cannot be shown without a connection. ' +
        "It opens again once you are back online.</p>" +
        (add ? '<p><a href="/meals/new">Add a meal</a>: it is saved on this device and uploads by itself later.</p>' : "") +
        "</main></body></html>";
      return new Response(html, { status: 503, headers: { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" } });
    });
  });
}

// Messages from pages: warm keeps the Add form and the shell for offline
// use; forget empties every person's page cache.
self.addEventListener("message", function (e) {
  var d = e.data || {};
  if (d.type === "warm" && d.user) e.waitUntil(warm(d.user, d.urls || []));
  if (d.type === "forget") e.waitUntil(forget());
});

// warm keeps the Add form for hash, with every static file it and the
// page that asked name, unless it is kept already (a visit to the Add
// page itself keeps it fresh). The form goes in last, so that a kept form
// means its files are kept too.
function warm(hash, urls) {
  return setUser(hash).then(function () {
    return caches.open(PAGES + hash);
  }).then(function (pages) {
    return pages.match("/meals/new").then(function (hit) {
      if (hit) return;
      return fetch("/meals/new", { credentials: "same-origin" }).then(function (resp) {
        if (!resp.ok || resp.headers.get("X-Ndiro-User") !== hash) return;
        return resp.clone().text().then(function (html) {
          var found = html.match(/\/static\/[^"'\s>]+\?v=[0-9a-f]+/g) || [];
          return keepShell(found.concat(urls));
        }).then(function () { return pages.put("/meals/new", resp); });
      });
    });
  }).catch(function () {});
}

// keepShell puts the static files at urls into the shell cache, those it
// lacks only.
function keepShell(urls) {
  return caches.open(SHELL).then(function (c) {
    var all = urls.map(function (u) { return u.replace(/&amp;/g, "&"); });
    return Promise.all(all.filter(function (u, i) { return all.indexOf(u) === i; }).map(function (u) {
      return c.match(u).then(function (hit) {
        return hit || fetch(u).then(function (r) { if (r.ok) return c.put(u, r); });
      });
    }));
  });
}

self.addEventListener("sync", function (e) {
  if (e.tag !== "ndiro-outbox") return;
  e.waitUntil(currentUser().then(function (hash) {
    if (!hash) return;
    return self.NdiroOutbox.flush(hash).then(function () { return notifyPages(); });
  }));
});

function notifyPages() {
  return self.clients.matchAll({ type: "window" }).then(function (cs) {
    cs.forEach(function (c) { c.postMessage({ type: "outbox-changed" }); });
  });
}
