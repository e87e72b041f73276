// <tensor-scope src="…"> : the Tensorscope viewer embedded in any page, with one line of HTML:
//
//   <script src="https://VIEWER/embed.js"></script>
//   <tensor-scope src="https://…/model.safetensors"></tensor-scope>
//
// The element shows the viewer's compact embed mode (summary, quant mix, tensor table,
// histogram on click) in an iframe that fills the element's box; give the element a height
// (default 480px). `src` takes one or more URLs separated by spaces (shards, or one
// model.safetensors.index.json), hf://owner/repo[@rev]/path, or a whole repository
// (hf://owner/repo[@rev] or its web address: its variants side by side); `endpoint` names another
// Hub-compatible server for hf:// addresses. Relative URLs resolve against the page. The
// checkpoint's server must allow Range requests from the viewer's origin (CORS).
// A classic script (not a module), so the viewer's host needs no CORS headers to serve it.
(() => {
const VIEWER = new URL('./', document.currentScript?.src || document.baseURI);

class TensorScope extends HTMLElement {
  static get observedAttributes() {
    return ['src', 'endpoint'];
  }
  constructor() {
    super();
    const root = this.attachShadow({ mode: 'open' });
    root.innerHTML =
      '<style>:host{display:block;height:480px;border:1px solid #8884;border-radius:6px;overflow:hidden}' +
      'iframe{display:block;width:100%;height:100%;border:0}</style><iframe title="Tensorscope" loading="lazy"></iframe>';
    this.frame = root.querySelector('iframe');
  }
  connectedCallback() {
    this.update();
  }
  attributeChangedCallback() {
    this.update();
  }
  update() {
    const src = (this.getAttribute('src') || '').split(/\s+/).filter(Boolean);
    const q = ['embed'];
    for (const s of src) {
      // A src that is no URL at all goes as it is: the viewer says why it cannot open it,
      // rather than the previous model staying on show.
      let abs = s;
      try {
        if (!s.startsWith('hf://')) abs = new URL(s, document.baseURI).href;
      } catch {}
      q.push('url=' + encodeURIComponent(abs));
    }
    const endpoint = this.getAttribute('endpoint');
    if (endpoint) q.push('endpoint=' + encodeURIComponent(endpoint));
    const url = new URL('index.html?' + q.join('&'), VIEWER).href;
    if (this.frame.getAttribute('src') !== url) this.frame.setAttribute('src', url);
  }
}

if (!customElements.get('tensor-scope')) customElements.define('tensor-scope', TensorScope);
})();
