"""The web portal in a real browser (Debian's chromium + chromium-driver via
python3-selenium, headless) against a real muster: muster-api serving
build/web/ui, muster-scheduler and a fake-GPU agent. Signs in with a token,
submits through the form (dry run first), watches the job appear in the
queue and reach COMPLETED without a reload, reads its events and log line;
the explain of a blocked job shows its planned start; an admin drains a node
from the Nodes view; a tenant sees only its jobs; a wrong token is refused
clearly; a page from another (allowed) origin lists jobs and reads the event
stream with fetch, one from a disallowed origin is refused by the browser.
Screenshots of every view go to <build>/portal-screenshots/."""
import http.server
import os
import shutil
import threading

import harness
from harness import check, check_eq
from test_jobs_common import tenant, token

S = {}

CROSS_PAGE = b"""<!doctype html><html><body><pre id="out">loading</pre><script>
const [api, tok] = decodeURIComponent(location.hash.slice(1)).split('|');
const out = document.getElementById('out');
(async () => {
  const lines = [];
  try {
    const r = await fetch(api + '/v1/jobs?limit=5', {headers: {Authorization: 'Bearer ' + tok}});
    const j = await r.json();
    lines.push('jobs ' + r.status + ' ' + j.items.length);
    const s = await fetch(api + '/v1/events?after=0', {headers: {Authorization: 'Bearer ' + tok}});
    const rd = s.body.getReader();
    let text = '';
    while (!text.includes('event: ')) text += new TextDecoder().decode((await rd.read()).value);
    lines.push('events ' + s.status + ' ' + text.match(/event: ([a-z._]+)/)[1]);
    rd.cancel();
  } catch (e) {
    lines.push('blocked ' + e.name); lines.push(String(e.message));
  }
  out.textContent = lines.join('\\n');
})();
</script></body></html>"""


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(CROSS_PAGE)))
        self.end_headers()
        self.wfile.write(CROSS_PAGE)

    def log_message(self, *a):
        pass


def static_server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    o = Options()
    o.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--disable-background-networking", "--window-size=1280,900"):
        o.add_argument(a)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)


def setup(c):
    if S:
        return S
    harness.require_binary("muster-agent")
    harness.require_binary("muster-scheduler")
    ui = os.path.join(c.build_dir, "web", "ui")
    check(os.path.exists(os.path.join(ui, "app.js")), "the portal is not built in", ui)
    S["ok_srv"], S["bad_srv"] = static_server(), static_server()
    S["ok_origin"] = "http://127.0.0.1:%d" % S["ok_srv"].server_port
    c.start_api(MUSTER_UI_DIR=ui, MUSTER_CORS_ORIGINS=S["ok_origin"])
    for t in ("web_a", "web_b"):
        tenant(c, t)
        c.sql("INSERT INTO quotas (tenant_id, max_gpus) SELECT id, 99 FROM tenants WHERE name = $1", t)
    S["ta"] = token(c, "tenant", "web_a", user="pat")
    S["tb"] = token(c, "tenant", "web_b", user="bo")
    st, _, b = c.api("POST", "/v1/tokens", {"name": "web-agent", "role": "agent", "node": "web-n1"})
    check_eq(st, 201, b)
    c.start_process(["muster-scheduler", "--db", c.db_url], name="scheduler")
    c.start_process(
        [harness.binary("muster-agent"), "--api", "127.0.0.1:%d" % c.grpc_port, "--node", "web-n1",
         "--address", "127.0.0.1", "--state-dir", os.path.join(c.dir, "agent"),
         "--gpu-backend", "fake", "--fake-gpus", "8", "--heartbeat-interval", "300ms"]
        + c.agent_flags(),
        env={"MUSTER_AGENT_TOKEN": b["token"]}, name="agent",
        wait_for=lambda: c.sql_value("SELECT count(*) FROM nodes WHERE name = 'web-n1' AND up") == "1")
    S["shots"] = os.path.join(c.build_dir, "portal-screenshots")
    shutil.rmtree(S["shots"], ignore_errors=True)
    os.makedirs(S["shots"])
    S["d"] = browser()
    return S


def wait(d, fn, what, timeout=30):
    from selenium.webdriver.support.ui import WebDriverWait
    try:
        return WebDriverWait(d, timeout, poll_frequency=0.2).until(lambda _: fn())
    except Exception:
        shot(d, "failed-" + what.replace(" ", "-"))
        raise harness.CheckFailed("browser: timed out waiting for %s; page: %.1500s"
                                  % (what, d.find_element("tag name", "body").text))


def shot(d, name):
    d.save_screenshot(os.path.join(S["shots"], name + ".png"))


def text(d, css):
    els = d.find_elements("css selector", css)
    return els[0].text if els else ""


def sign_in(c, d, tok, ok=True):
    d.get(c.api_url + "/ui/#/queue")
    d.execute_script("sessionStorage.clear()")
    d.refresh()
    wait(d, lambda: d.find_elements("id", "token"), "the sign-in form")
    d.find_element("id", "token").send_keys(tok)
    d.find_element("id", "login").click()
    if ok:
        wait(d, lambda: d.find_elements("id", "who"), "signed in")


def test_wrong_token(c):
    s = setup(c)
    d = s["d"]
    sign_in(c, d, "mst_not-a-real-token", ok=False)
    wait(d, lambda: "not valid" in text(d, ".error"), "the wrong-token error")
    check(not d.find_elements("id", "who"), "signed in with a wrong token")
    shot(d, "login-error")


def test_submit_live_to_completed(c):
    s = setup(c)
    d = s["d"]
    sign_in(c, d, s["ta"])
    wait(d, lambda: "tenant" in text(d, "#who") and "web_a" in text(d, "#who"), "signed in")
    check(d.execute_script("return sessionStorage.getItem('muster.token')") == s["ta"])
    wait(d, lambda: "live" in text(d, "#live"), "the event stream")
    d.find_element("id", "nav-submit").click()
    wait(d, lambda: d.find_elements("id", "s-command"), "the submit form")
    d.find_element("id", "s-name").send_keys("portal-job")
    cmd = d.find_element("id", "s-command")
    cmd.clear()
    cmd.send_keys("sleep 2; echo portal-hello")
    d.find_element("id", "dry-run").click()
    wait(d, lambda: "Would start" in text(d, "#dry-result"), "the dry run")
    shot(d, "submit")
    d.find_element("id", "submit").click()
    wait(d, lambda: "/job/" in d.current_url, "the job page")
    jid = int(d.current_url.rsplit("/", 1)[1])
    check_eq(c.sql_value("SELECT name FROM jobs WHERE id = $1", str(jid)), "portal-job")
    # the queue, open while the job runs: it gets to COMPLETED without a reload
    d.find_element("id", "nav-queue").click()
    row = "tr.job-row[data-id='%d']" % jid
    wait(d, lambda: d.find_elements("css selector", row), "the job in the queue")
    marker = d.execute_script("window.__noreload = 1; return window.__noreload")
    check_eq(marker, 1)
    wait(d, lambda: "COMPLETED" in text(d, row), "COMPLETED in the queue", 60)
    check_eq(d.execute_script("return window.__noreload"), 1, "the page was reloaded")
    shot(d, "queue")
    d.find_element("css selector", row).click()
    wait(d, lambda: "portal-hello" in text(d, "#log"), "the log line")
    ev = text(d, "#events")
    for k in ("job.submitted", "run.running", "job.completed"):
        check(k in ev, k, ev)
    check("COMPLETED" in text(d, "h2"), text(d, "h2"))
    check("web-n1" in text(d, "#runs"), text(d, "#runs"))
    shot(d, "job")
    S["jid_a"] = jid


def test_blocked_explain_and_drain(c):
    s = setup(c)
    d = s["d"]
    st, _, big = c.api("POST", "/v1/jobs", {"name": "hog", "nodes": 1, "gpus_per_node": 8,
                                            "command": ["sleep", "120"], "time_limit": 600},
                       token=s["ta"])
    check_eq(st, 201, big)
    c.wait_until(lambda: c.sql_value("SELECT state FROM jobs WHERE id = $1", str(big["id"])) == "RUNNING",
                 30, "the hog runs")
    st, _, blocked = c.api("POST", "/v1/jobs", {"name": "waits", "nodes": 1, "gpus_per_node": 8,
                                                "command": ["true"], "time_limit": 60}, token=s["ta"])
    check_eq(st, 201, blocked)
    sign_in(c, d, s["ta"])
    d.get(c.api_url + "/ui/#/job/%d" % blocked["id"])
    wait(d, lambda: text(d, "#planned-start") not in ("", "—"), "a planned start in explain")
    shot(d, "job-blocked")
    d.find_element("id", "cancel").click()
    wait(d, lambda: "CANCELLED" in text(d, "h2"), "the cancelled job")
    # an admin drains the busy node from the Nodes view
    sign_in(c, d, c.admin_token)
    d.find_element("id", "nav-nodes").click()
    card = "[data-node='web-n1']"
    wait(d, lambda: d.find_elements("css selector", card + " button.drain"), "the node card")
    check(len(d.find_elements("css selector", card + " .gpu.busy")) == 8, text(d, card))
    d.find_element("css selector", card + " button.drain").click()
    wait(d, lambda: "DRAINING" in text(d, card), "DRAINING")
    shot(d, "nodes")
    d.find_element("css selector", card + " button.resume").click()
    wait(d, lambda: d.find_elements("css selector", card + " button.drain"), "resumed")
    c.api("POST", "/v1/jobs/%d/cancel" % big["id"], {})
    for view in ("fairshare", "usage", "scheduler"):
        d.find_element("id", "nav-" + view).click()
        wait(d, lambda: d.find_elements("id", view), "the %s view" % view)
        if view == "usage":
            wait(d, lambda: "web_a" in text(d, "#usage") and d.find_elements("css selector", ".uplot"),
                 "usage rows and chart")
        if view == "fairshare":
            wait(d, lambda: "web_a" in text(d, "#fairshare"), "fair share rows")
        if view == "scheduler":
            wait(d, lambda: "Leader" in text(d, "#scheduler") and text(d, "#scheduler").count("\n") > 4,
                 "scheduler figures")
        shot(d, view)


def test_tenant_sees_only_its_jobs(c):
    s = setup(c)
    d = s["d"]
    st, _, jb = c.api("POST", "/v1/jobs", {"name": "bee", "nodes": 1, "gpus_per_node": 1,
                                           "command": ["true"]}, token=s["tb"])
    check_eq(st, 201, jb)
    sign_in(c, d, s["tb"])
    wait(d, lambda: d.find_elements("css selector", "tr.job-row[data-id='%d']" % jb["id"]), "its job")
    ids = [e.get_attribute("data-id") for e in d.find_elements("css selector", "tr.job-row")]
    check_eq(ids, [str(jb["id"])], "tenant web_b sees other jobs")
    d.get(c.api_url + "/ui/#/job/%d" % S["jid_a"])
    wait(d, lambda: "404" in text(d, ".error"), "404 for another tenant's job")
    # narrow screen
    d.set_window_size(390, 844)
    d.get(c.api_url + "/ui/#/queue")
    wait(d, lambda: d.find_elements("css selector", "tr.job-row"), "the narrow queue")
    check(d.execute_script("return document.documentElement.scrollWidth") <= 400, "the page overflows")
    shot(d, "queue-narrow")
    d.set_window_size(1280, 900)


def test_cross_origin(c):
    s = setup(c)
    d = s["d"]
    arg = "#%s|%s" % (c.api_url, c.admin_token)
    d.get(s["ok_origin"] + "/" + arg)
    wait(d, lambda: "events 200" in text(d, "#out") or "blocked" in text(d, "#out"), "the allowed page")
    out = text(d, "#out")
    check(out.startswith("jobs 200 ") and "\nevents 200 " in out, out)
    d.get("http://127.0.0.1:%d/%s" % (s["bad_srv"].server_port, arg))
    wait(d, lambda: text(d, "#out") != "loading", "the disallowed page")
    check(text(d, "#out").startswith("blocked TypeError"), text(d, "#out"))


def test_zz_close(c):
    if "d" in S:
        S["d"].quit()
    for k in ("ok_srv", "bad_srv"):
        if k in S:
            S[k].shutdown()


if __name__ == "__main__":
    harness.main(api=False)
