/* test_metrics.c - common/metrics.h: histogram and label text, the listener. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "metrics.h"

static void hist_text(void **state)
{
	static const double b[] = { 0.1, 1 };
	struct mu_metrics_hist h;
	struct mu_buf out = MU_BUF_INIT;
	(void)state;

	mu_metrics_hist_init(&h, b, 2);
	mu_metrics_hist_observe(&h, 0.05);
	mu_metrics_hist_observe(&h, 0.5);
	mu_metrics_hist_observe(&h, 7);
	mu_metrics_hist_render(&out, "x_seconds", "help", &h);
	assert_string_equal(out.p, "# HELP x_seconds help\n# TYPE x_seconds histogram\n"
				   "x_seconds_bucket{le=\"0.1\"} 1\nx_seconds_bucket{le=\"1\"} 2\n"
				   "x_seconds_bucket{le=\"+Inf\"} 3\nx_seconds_sum 7.550000\n"
				   "x_seconds_count 3\n");
	mu_buf_release(&out);
}

static void label_escapes(void **state)
{
	struct mu_buf out = MU_BUF_INIT;
	(void)state;

	mu_metrics_label(&out, "a\"b\\c\nd");
	assert_string_equal(out.p, "\"a\\\"b\\\\c\\nd\"");
	mu_buf_release(&out);
}

static void render(struct mu_buf *b, void *arg)
{
	(*(int *)arg)++;
	mu_buf_adds(b, "# TYPE t gauge\nt 1\n");
}

static void ask(int port, const char *req, char *resp, size_t n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t len = 0;
	ssize_t r;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while (len < n - 1 && (r = read(fd, resp + len, n - 1 - len)) > 0)
		len += (size_t)r;
	resp[len] = '\0';
	close(fd);
}

static void listener(void **state)
{
	struct mu_metrics_server *s = NULL;
	struct mu_error err = { 0 };
	char resp[1024];
	int calls = 0;
	struct timespec t0, t1;
	(void)state;

	assert_int_equal(mu_metrics_serve("nonsense", render, &calls, &s, &err), MU_EINVAL);
	assert_int_equal(mu_metrics_serve("127.0.0.1:0", render, &calls, &s, &err), 0);
	assert_true(mu_metrics_port(s) > 0);
	ask(mu_metrics_port(s), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", resp, sizeof(resp));
	assert_non_null(strstr(resp, "HTTP/1.1 200 OK"));
	assert_non_null(strstr(resp, "\r\n\r\n# TYPE t gauge\nt 1\n"));
	assert_int_equal(calls, 1);
	ask(mu_metrics_port(s), "GET /other HTTP/1.1\r\n\r\n", resp, sizeof(resp));
	assert_non_null(strstr(resp, "404"));
	ask(mu_metrics_port(s), "POST /metrics HTTP/1.1\r\n\r\n", resp, sizeof(resp));
	assert_non_null(strstr(resp, "405"));
	assert_int_equal(calls, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	mu_metrics_stop(s); /* returns at once: the thread is woken, not waited out */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 2);
	mu_metrics_stop(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hist_text),
		cmocka_unit_test(label_escapes),
		cmocka_unit_test(listener),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
