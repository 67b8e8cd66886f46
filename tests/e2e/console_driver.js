// tests/e2e/console_driver.js - headless Chromium driven by playwright-core
// for tests/e2e/test_console.py, one JSON command per line on stdin, one
// JSON answer per line on stdout ({"ok": true, "value": ...} or {"ok":
// false, "error": "..."}), so that the Python test keeps the plan: it
// clicks, fills and reads the page here, kills processes and computes the
// expected answers itself, and waits with conftest.wait_until.
//
// usage: node console_driver.js NODE_MODULES_DIR CHROMIUM_PATH
// commands: {"op": "goto", "url"}, {"op": "click", "sel"}, {"op": "fill",
// "sel", "text"}, {"op": "text", "sel"}, {"op": "eval", "js"} (an
// expression evaluated in the page), {"op": "shot", "path"}, {"op": "close"}.
'use strict';
const path = require('path');
const readline = require('readline');
const { chromium } = require(path.join(process.argv[2], 'playwright-core'));

async function main() {
    const browser = await chromium.launch({
        executablePath: process.argv[3], headless: true,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
               '--disable-background-networking', '--disable-component-update', '--disable-sync',
               '--no-first-run', '--disable-dev-shm-usage'],
    });
    const page = await browser.newPage({ viewport: { width: 1280, height: 1500 } });
    const logs = [];
    page.on('console', (m) => logs.push(m.type() + ': ' + m.text()));
    page.on('pageerror', (e) => logs.push('pageerror: ' + e.message));
    const rl = readline.createInterface({ input: process.stdin });
    const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');
    say({ ok: true, value: 'ready' });
    for await (const line of rl) {
        if (!line.trim()) continue;
        const c = JSON.parse(line);
        try {
            let value = null;
            switch (c.op) {
            case 'goto': await page.goto(c.url); break;
            case 'click': await page.click(c.sel, { timeout: 120000 }); break;
            case 'fill': await page.fill(c.sel, c.text, { timeout: 120000 }); break;
            case 'text': value = await page.textContent(c.sel, { timeout: 120000 }); break;
            case 'eval': value = await page.evaluate(c.js); break;
            case 'shot': await page.screenshot({ path: c.path, fullPage: true }); break;
            case 'logs': value = logs.splice(0); break;
            case 'close': await browser.close(); say({ ok: true, value: null }); process.exit(0);
            default: throw new Error('unknown op ' + c.op);
            }
            say({ ok: true, value });
        } catch (e) {
            say({ ok: false, error: String(e && e.message || e) });
        }
    }
    await browser.close();
    process.exit(0);
}

main().catch((e) => {
    process.stdout.write(JSON.stringify({ ok: false, error: 'driver: ' + String(e && e.stack || e) }) + '\n');
    process.exit(1);
});
