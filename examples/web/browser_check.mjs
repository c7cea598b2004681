// The page in a real browser: headless Chromium driven by puppeteer-core.
// Asks the umbrella question, waits for the streamed answer and the
// confirmation, clicks Allow, waits for the tool's result and the final
// answer, takes the screenshot; then asks again and clicks Deny. Prints what
// the page shows, as JSON, for tests/agentscope2/test_agui_web.py to check.
//
// Usage: node browser_check.mjs PAGE_URL SCREENSHOT_PNG [CHROMIUM]
import puppeteer from "puppeteer-core";

const [url, screenshot, chromium = "/usr/bin/chromium"] = process.argv.slice(2);
// How long one step may take: a replayed run takes well under a second.
const STEP_MS = 30_000;

// Waits until the page's conversation has `count` entries matching `selector`,
// the last of them containing `text`.
async function shown(page, selector, text, count = 1) {
  await page.waitForFunction(
    (selector, text, count) => {
      const found = document.querySelectorAll(`#log > ${selector}`);
      return found.length >= count && found[count - 1].textContent.includes(text);
    },
    { timeout: STEP_MS },
    selector,
    text,
    count,
  );
}

// Sends the question in the box, answers its confirmation with `button`, and
// waits for the answer after it (the `count`-th of the conversation).
async function ask(page, button, answer, count) {
  await page.click("#send");
  await shown(page, ".assistant", "Let me check that.", count * 2 - 1);
  await shown(page, ".confirm", "get_weather", count);
  const confirmation = (await page.$$("#log > .confirm"))[count - 1];
  await (await confirmation.$(`::-p-text(${button})`)).click();
  await shown(page, ".assistant", answer, count * 2);
}

// What the conversation shows, by kind of entry.
function conversation() {
  const texts = (selector) => [...document.querySelectorAll(`#log > ${selector}`)].map((e) => e.textContent);
  return {
    user: texts(".user"),
    assistant: texts(".assistant"),
    thinking: texts(".thinking"),
    thinkingOpen: [...document.querySelectorAll("#log > details.thinking")].some((d) => d.open),
    tool: texts(".tool"),
    errors: texts(".error"),
  };
}

if (!url || !screenshot) {
  console.error("usage: node browser_check.mjs PAGE_URL SCREENSHOT_PNG [CHROMIUM]");
  process.exit(2);
}
// --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
const browser = await puppeteer.launch({ executablePath: chromium, args: ["--no-sandbox"] });
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 720, height: 560 });
  const failures = [];
  page.on("pageerror", (error) => failures.push(error.message));
  await page.goto(url);
  await page.waitForSelector("#send", { timeout: STEP_MS });
  await ask(page, "Allow", "No umbrella needed", 1);
  await shown(page, ".tool", "Sunny in Paris");
  await page.screenshot({ path: screenshot });
  await page.type("#text", "Should I take an umbrella in Paris?");
  await ask(page, "Deny", "I was not allowed", 2);
  console.log(JSON.stringify({ ...(await page.evaluate(conversation)), failures }));
} catch (error) {
  console.error(`browser_check.mjs: ${error.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
