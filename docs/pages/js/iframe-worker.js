// Search for the site opened from disk (file://), where browsers refuse to start a Web Worker.
//
// Material's search runs in a worker. Its offline plugin would load a shim for file:// from unpkg.com,
// which an air-gapped reader cannot reach and which would be the site's one request off the disk. This
// file takes its place (the plugin adds nothing when a polyfill named iframe-worker is configured): a
// Worker stand-in that runs the worker script in a hidden same-origin iframe, whose postMessage and
// importScripts are wired back to this page. Written for localeval; served sites keep the real Worker.
(function () {
  "use strict";
  if (location.protocol !== "file:") return;

  class IFrameWorker extends EventTarget {
    constructor(url) {
      super();
      this.onmessage = null;
      this.onerror = null;
      this.frame = document.createElement("iframe");
      this.frame.hidden = true;
      document.body.appendChild(this.frame);
      const scope = this.frame.contentWindow;
      // What a worker script calls as globals: its messages come straight back to this object.
      scope.postMessage = (data) => this.deliver(data);
      scope.importScripts = (...urls) => urls.reduce((loaded, src) => loaded.then(() => this.load(src)),
                                                      Promise.resolve());
      this.ready = this.load(new URL(url, location.href).href);
    }

    load(src) {
      return new Promise((resolve, reject) => {
        const script = this.frame.contentDocument.createElement("script");
        script.src = src;
        script.onload = () => resolve();
        script.onerror = () => {
          const event = new ErrorEvent("error", {message: "could not load " + src, filename: src});
          this.dispatchEvent(event);
          if (this.onerror) this.onerror(event);
          reject(event);
        };
        this.frame.contentDocument.body.appendChild(script);
      });
    }

    deliver(data) {
      const event = new MessageEvent("message", {data});
      this.dispatchEvent(event);
      if (this.onmessage) this.onmessage(event);
    }

    postMessage(data) {
      this.ready.then(() => {
        const scope = this.frame.contentWindow;
        if (scope) scope.dispatchEvent(new scope.MessageEvent("message", {data}));
      });
    }

    terminate() {
      this.frame.remove();
    }
  }

  window.IFrameWorker = IFrameWorker;
  window.Worker = IFrameWorker;
})();
