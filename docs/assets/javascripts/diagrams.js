// Render the ```mermaid fences of the docs (divs of class "diagram") with the vendored
// mermaid, into the page's own DOM, so that a headless browser test can see the SVGs.
document.addEventListener("DOMContentLoaded", () => {
  mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });
  mermaid.run({ querySelector: "div.diagram" });
});
