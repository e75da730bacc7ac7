/**
 * What scripts and styles draw after the document: canvases (2D after load and after a data
 * fetch, WebGL), video posters, shadow DOM (open, closed, declarative, slotted) and CSS
 * animations that run at load. 800x600, PNG.
 */
import { COLOURS, type QualityPage, type Rgb, css, doc, solidPng } from './page';
import { expectColour, expectInk, expectSize } from './picture';

const fill = (c: Rgb) => `'${css(c)}'`;

export const DYNAMIC_PAGES: QualityPage[] = [
  {
    name: 'canvas-late',
    mimics: 'charts (Chart.js, Highcharts) drawn on a canvas in an animation frame after load, and after their data is fetched',
    routes: {
      '/': {
        body: doc(
          '<canvas id="a" width="200" height="100" style="position:absolute;left:20px;top:20px"></canvas>' +
            '<canvas id="b" width="200" height="100" style="position:absolute;left:240px;top:20px"></canvas>' +
            "<script>addEventListener('load', () => { requestAnimationFrame(() => { const c = document.getElementById('a').getContext('2d'); " +
            `c.fillStyle = ${fill(COLOURS.green)}; c.fillRect(0, 0, 200, 100); }); ` +
            "fetch('data.json').then((r) => r.json()).then((d) => { const c = document.getElementById('b').getContext('2d'); " +
            'c.fillStyle = d.colour; c.fillRect(0, 0, 200, 100); }); });</script>',
        ),
      },
      '/data.json': { delayMs: 300, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ colour: css(COLOURS.blue) }) },
    },
    // The chart's data comes 300 ms after load: a second is a fair wait for a chart.
    params: { wait: 1000 },
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 600);
      expectColour(p, 120, 70, COLOURS.green, 'the canvas drawn in an animation frame after load');
      expectColour(p, 340, 70, COLOURS.blue, 'the canvas drawn once its data was fetched');
    },
  },
  {
    name: 'canvas-webgl',
    mimics: 'WebGL maps and 3D viewers (Mapbox GL, Google Maps vector, three.js product viewers)',
    routes: {
      '/': {
        body: doc(
          '<canvas id="g" width="300" height="200" style="position:absolute;left:20px;top:20px"></canvas>' +
            '<p id="why" style="position:absolute;left:20px;top:240px;margin:0"></p><script>const gl = document.getElementById(\'g\').getContext(\'webgl\');' +
            "if (!gl) document.getElementById('why').textContent = 'no WebGL'; else { gl.clearColor(0.8, 0.1, 0.5, 1); gl.clear(gl.COLOR_BUFFER_BIT); }</script>",
        ),
      },
    },
    params: {},
    async check(a) {
      const p = await a.picture();
      expectColour(p, 170, 120, [204, 26, 128], 'the WebGL canvas (cleared to a colour)', 4);
    },
  },
  {
    name: 'video-poster',
    mimics: 'self-hosted hero and product videos (<video preload="none">) that show their poster image until played',
    routes: {
      '/': {
        body: doc(
          `<video width="400" height="225" preload="none" poster="${solidPng(COLOURS.orange, 400, 225)}" style="position:absolute;left:20px;top:20px">` +
            '<source src="clip.mp4" type="video/mp4"></video>' +
            `<video width="400" height="225" controls preload="none" poster="${solidPng(COLOURS.teal, 400, 225, 200)}" style="position:absolute;left:20px;top:280px">` +
            '<source src="clip.mp4" type="video/mp4"></video>',
        ),
      },
    },
    params: {},
    async check(a) {
      const p = await a.picture();
      expectColour(p, 220, 130, COLOURS.orange, 'the poster of a video without controls');
      // With controls, away from the play button and the control bar.
      expectColour(p, 60, 310, COLOURS.teal, 'the poster (served late) of a video with controls');
    },
  },
  {
    name: 'shadow-dom',
    mimics:
      'design systems and widgets built as web components (Shoelace, Salesforce Lightning, YouTube, embedded widgets): open, closed and declarative shadow roots, slots',
    routes: {
      '/': {
        body: doc(
          '<q-open style="position:absolute;left:20px;top:20px"></q-open><q-closed style="position:absolute;left:240px;top:20px"></q-closed>' +
            '<div style="position:absolute;left:460px;top:20px"><template shadowrootmode="open"><style>div{width:200px;height:100px;background:' +
            `${css(COLOURS.indigo)}}</style><div></div></template></div>` +
            '<q-card style="position:absolute;left:20px;top:160px"><span slot="title">Slotted title</span></q-card>' +
            '<script>const make = (mode, colour) => class extends HTMLElement { constructor() { super(); const r = this.attachShadow({ mode }); ' +
            "r.innerHTML = '<style>:host{display:block}div{width:200px;height:100px;background:' + colour + '}</style><div></div>'; } };" +
            `customElements.define('q-open', make('open', ${fill(COLOURS.teal)})); customElements.define('q-closed', make('closed', ${fill(COLOURS.pink)}));` +
            "customElements.define('q-card', class extends HTMLElement { constructor() { super(); this.attachShadow({ mode: 'open' }).innerHTML = " +
            `'<style>:host{display:block;width:400px;height:80px;border-left:40px solid ${css(COLOURS.orange)};font:28px sans-serif}</style>' + ` +
            '\'<slot name="title"></slot>\'; } });</script>',
        ),
      },
    },
    params: {},
    async check(a) {
      const p = await a.picture();
      expectColour(p, 120, 70, COLOURS.teal, 'an open shadow root');
      expectColour(p, 340, 70, COLOURS.pink, 'a closed shadow root');
      expectColour(p, 560, 70, COLOURS.indigo, 'a declarative shadow root');
      expectColour(p, 40, 200, COLOURS.orange, 'the styles of a shadow root around a slot');
      expectInk(p, { x: 60, y: 160, w: 300, h: 80 }, 'the slotted text');
    },
  },
  {
    name: 'css-animation',
    mimics: 'landing pages whose hero fades and slides in at load (animate.css, Webflow/Framer interactions)',
    routes: {
      '/': {
        body: doc(
          `<div class="fade" style="position:absolute;left:20px;top:220px;width:300px;height:150px;background:${css(COLOURS.blue)}"></div>` +
            `<div class="slide" style="position:absolute;left:400px;top:20px;width:300px;height:150px;background:${css(COLOURS.green)}"></div>`,
          {
            head:
              '<style>@keyframes fade{from{opacity:0}to{opacity:1}}@keyframes slide{from{transform:translateX(-380px);opacity:0}to{transform:none;opacity:1}}' +
              '.fade{animation:fade 600ms ease-out 200ms both}.slide{animation:slide 700ms ease-out both}</style>',
          },
        ),
      },
    },
    // The animations end 800 ms after the page starts; a second after load sees them ended, as the default wait (1.5 s) does.
    params: { wait: 1000 },
    async check(a) {
      const p = await a.picture();
      expectColour(p, 170, 295, COLOURS.blue, 'the faded-in block, fully opaque');
      expectColour(p, 550, 95, COLOURS.green, 'the slid-in block, at its place');
      expectColour(p, 100, 95, COLOURS.white, 'where the sliding block started, left empty');
    },
  },
];
