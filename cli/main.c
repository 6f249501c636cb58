/*
 * muster - the command-line client of muster-api (REST), with Slurm's verbs
 * and flags where Slurm has them. See docs/cli.md.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli_out.h"
#include "cmd.h"

#define COMMON_HELP                                                                   \
	"Common options: --url URL, --token TOKEN (else MUSTER_URL/MUSTER_TOKEN or\n"      \
	"~/.config/muster/config), --json (print the server's JSON), --help.\n"           \
	"Before the command: --cacert FILE (else MUSTER_CA_FILE), the CA of an https:// URL.\n"

static const struct command {
	const char *name;
	cli_cmd_fn fn;
	const char *summary;
	const char *usage;
} commands[] = {
	{ "submit", cmd_submit, "submit a gang job (sbatch)",
	  "usage: muster submit [options] [--] COMMAND [ARGS...]\n"
	  "       muster submit [options] SCRIPT [ARGS...]   (a file starting with #!: sbatch)\n"
	  "       muster submit [options] --wrap 'SHELL COMMAND'\n"
	  "  -N, --nodes N|MIN-MAX      nodes of the gang (default 1; MIN-MAX = elastic)\n"
	  "      --min-nodes N          smallest gang an elastic job may start with\n"
	  "      --gpus-per-node [MODEL:]N   GPUs on every node (default 0)\n"
	  "      --gpu-model MODEL      GPU model the nodes must have\n"
	  "      --procs-per-node N     processes per node (alias --ntasks-per-node)\n"
	  "      --mem SIZE             memory limit per node: bytes or 512M, 64G (Slurm --mem)\n"
	  "      --cpus-per-node N      CPUs per node (Slurm --cpus-per-task x tasks)\n"
	  "      --launcher NAME        none|torchrun|deepspeed|accelerate: muster writes the launch line\n"
	  "      --on-shrink POLICY     restart|keep: an elastic gang that lost nodes (default restart)\n"
	  "  -t, --time LIMIT           time limit: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS\n"
	  "  -J, --job-name NAME        job name\n"
	  "  -A, --tenant NAME          tenant (alias --account); admins must give one\n"
	  "      --user NAME            submitting user (admin tokens only)\n"
	  "  -q, --priority-class NAME  priority class (alias --qos)\n"
	  "  -d, --dependency SPEC      afterok:ID[:ID...][,afterany:ID][,afternotok:ID]\n"
	  "      --label KEY=VALUE      label (repeatable)\n"
	  "      --env NAME[=VALUE]     environment variable (repeatable; NAME alone copies it)\n"
	  "  -D, --workdir DIR          working directory (alias --chdir)\n"
	  "      --topology required:LEVEL|preferred:LEVEL   e.g. required:rack\n"
	  "      --max-retries N        requeues allowed after node failure or preemption\n"
	  "      --idempotency-key KEY  a retry with the same key returns the same job\n"
	  "      --test-only            ask when the job would start; submit nothing\n"
	  "      --parsable             print only the job id\n"
	  "  -W, --wait                 block until the job (every array task) ends; exit with\n"
	  "                             its code (docs/cli.md: 0, the job's, 124, 130, 137)\n"
	  "Slurm's sbatch options, as in a #SBATCH line (the command line wins over the script):\n"
	  "  -o, --output PATTERN       stdout file (%j %x %A %a %N %n %t %u %%)\n"
	  "  -e, --error PATTERN        stderr file\n"
	  "  -a, --array SPEC           job array: 0-15%4, 1,3,5-7, 0-15:4\n"
	  "  -H, --hold                 submit held\n"
	  "  -b, --begin TIME           not before: now+1hour, 16:00, 2027-01-31T08:00, tomorrow\n"
	  "      --signal [B:]SIG[@S]   send SIG S seconds before the time limit\n"
	  "      --gres gpu[:TYPE]:N    GPUs per node;  -G, --gpus N: in all\n"
	  "  -n, --ntasks N             processes in all;  -c, --cpus-per-task N\n"
	  "      --export NAME[=V],...  environment;  --requeue / --no-requeue\n"
	  "  Resource options muster cannot honour (--constraint, --nodelist, ...) are errors;\n"
	  "  others (--partition, --mail-type, ...) print one warning each.\n" },
	{ "queue", cmd_queue, "list jobs (squeue)",
	  "usage: muster queue [options]\n"
	  "  -t, --state LIST    states: PENDING|PD, STARTING|CF, RUNNING|R, COMPLETED|CD,\n"
	  "                      FAILED|F, CANCELLED|CA, TIMEOUT|TO, or 'all'\n"
	  "                      (default: PENDING,STARTING,RUNNING)\n"
	  "  -A, --tenant NAME   only this tenant (and its subtree)\n"
	  "  -u, --user NAME     only this user\n"
	  "      --label K=V     only jobs with this label (repeatable, all must match)\n" },
	{ "history", cmd_history, "jobs that ended in a time window (sacct)",
	  "usage: muster history [options]\n"
	  "  -S, --starttime TIME   ended at or after (default: midnight; with -j: any time)\n"
	  "  -E, --endtime TIME     ended before (default: now)\n"
	  "                         TIME: now-2days, 16:00, 2027-01-31T08:00, MMDD[YY], today, ...\n"
	  "  -u, --user NAME        only this user\n"
	  "  -A, --accounts TENANT  only this tenant's subtree (alias --tenant)\n"
	  "  -s, --state LIST       COMPLETED|CD, FAILED|F, CANCELLED|CA, TIMEOUT|TO\n"
	  "  -j, --jobs ID[,ID...]  only these jobs\n"
	  "  -o, --format LIST      fields, NAME%WIDTH for a width: JobID,JobName,User,Tenant,\n"
	  "                         State,ExitCode,Elapsed,NNodes,AllocGPUs,GPUHours,Submit,\n"
	  "                         Start,End,Reason,Timelimit,QOS\n"
	  "  -P, --parsable2        fields split by '|', none at the end\n"
	  "  -n, --noheader         no header lines\n" },
	{ "show", cmd_show, "show jobs with runs and events (scontrol show job)",
	  "usage: muster show JOB [JOB...]\n" },
	{ "cancel", cmd_cancel, "cancel jobs (scancel)",
	  "usage: muster cancel JOB [JOB...]\n"
	  "  JOB is an id (an array's id cancels every task of it) or ARRAY_TASK (123_7: one task)\n" },
	{ "hold", cmd_hold, "hold pending jobs: they do not start (scontrol hold)",
	  "usage: muster hold JOB [JOB...]\n" },
	{ "release", cmd_release, "release held jobs (scontrol release)",
	  "usage: muster release JOB [JOB...]\n" },
	{ "requeue", cmd_requeue, "stop running jobs and queue them again (scontrol requeue)",
	  "usage: muster requeue JOB [JOB...]\n" },
	{ "settings", cmd_settings, "show or change the cluster policy settings (admin to change)",
	  "usage: muster settings [get [KEY...]]\n"
	  "       muster settings set KEY=VALUE [KEY=VALUE...]\n"
	  "  VALUE is JSON (4, true, [\"block\",\"rack\"]); topology_levels also takes block,rack.\n"
	  "  Every change is checked first and made at once or not at all.\n" },
	{ "update", cmd_update, "change a pending job (scontrol update)",
	  "usage: muster update JOB KEY=VALUE [KEY=VALUE...]\n"
	  "  TimeLimit=LIMIT       (time_limit) lower freely; at most the class's maximum\n"
	  "  QOS=CLASS             (priority_class)\n"
	  "  NumNodes=N            (nodes)      MinNodes=N|none (min_nodes)\n"
	  "  GpusPerNode=N         (gpus_per_node)\n"
	  "  Dependency=SPEC|none  (dependencies) afterok:ID[:ID...][,afterany:ID...]\n"
	  "  StartTime=TIME|none   (begin) now+1hour, 16:00, 2027-01-31T08:00, RFC 3339\n"
	  "  JobName=NAME          (name)\n"
	  "  label=K=V             (labels, repeatable; replaces them all; label= clears)\n"
	  "  Every change is made at once or none is.\n" },
	{ "logs", cmd_logs, "print a process's stdout or stderr from its node (-f follows)",
	  "usage: muster logs JOB [options]\n"
	  "  -f, --follow          keep printing new output until the process ends\n"
	  "      --node-rank N     the node, by its rank in the run (default 0)\n"
	  "      --local-rank R    the process on that node (default 0)\n"
	  "      --stderr          standard error instead of standard output\n"
	  "      --run RUN         a given run (attempt) of the job; default the latest\n" },
	{ "explain", cmd_explain, "why a job waits and when it should start",
	  "usage: muster explain JOB\n" },
	{ "tenants", cmd_tenants, "manage tenants (sacctmgr account)",
	  "usage: muster tenants list\n"
	  "       muster tenants show NAME\n"
	  "       muster tenants create NAME [--parent P] [--shares N] [--description TEXT]\n"
	  "       muster tenants update NAME [--parent P] [--shares N] [--description TEXT]\n"
	  "       muster tenants delete NAME\n" },
	{ "quota", cmd_quota, "show or set tenant quotas",
	  "usage: muster quota show [TENANT]\n"
	  "       muster quota set TENANT [--gpu-model M] [--guaranteed-gpus N] [--max-gpus N]\n"
	  "                [--max-running-jobs N] [--max-pending-jobs N] [--max-time-limit TIME]\n"
	  "       muster quota clear TENANT [--gpu-model M]\n"
	  "  'set' changes only the limits given; 'none' removes one limit.\n" },
	{ "classes", cmd_classes, "manage priority classes (sacctmgr qos)",
	  "usage: muster classes list\n"
	  "       muster classes show NAME\n"
	  "       muster classes create NAME --priority N [--preemptible yes|no] [--default yes|no]\n"
	  "                [--default-time-limit TIME] [--max-time-limit TIME|none]\n"
	  "                [--grace-period SECONDS] [--description TEXT]\n"
	  "       muster classes update NAME [the same options]\n"
	  "       muster classes delete NAME\n"
	  "  TIME is a Slurm time limit (MM, HH:MM:SS, D-HH:MM:SS, ...).\n" },
	{ "tokens", cmd_tokens, "manage API tokens",
	  "usage: muster tokens create --role admin|tenant|reader|agent [--name N] [--tenant T]\n"
	  "                [--user U] [--node NODE] [--expires-at RFC3339]\n"
	  "       muster tokens list\n"
	  "       muster tokens show ID\n"
	  "       muster tokens revoke ID [ID...]\n"
	  "  'create' prints the secret alone on stdout; it is shown only once.\n" },
	{ "nodes", cmd_nodes, "list nodes with state and GPU health (sinfo -N)",
	  "usage: muster nodes\n" },
	{ "node", cmd_node, "show, drain or resume a node (scontrol update node)",
	  "usage: muster node show NAME\n"
	  "       muster node drain NAME [--reason TEXT]\n"
	  "       muster node resume NAME\n" },
	{ "usage", cmd_usage, "GPU-hours per tenant or user (sreport)",
	  "usage: muster usage [--from TIME] [--to TIME] [--group-by tenant|user] [--tenant T]\n"
	  "  -S/--start and -E/--end are aliases of --from and --to.\n" },
	{ "fairshare", cmd_fairshare, "the tenant tree with shares, usage and fair-share factor (sshare)",
	  "usage: muster fairshare\n" },
	{ "scheduler", cmd_scheduler, "the scheduler leader, its epoch and last cycle",
	  "usage: muster scheduler\n" },
	{ "whoami", cmd_whoami, "the role, tenant and user of the token in use",
	  "usage: muster whoami\n" },
	{ "completion", cmd_completion, "print a bash completion script (from the option tables)",
	  "usage: muster completion bash\n"
	  "  e.g.  source <(muster completion bash)\n" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

const struct cli_command_info *cli_commands(size_t *n)
{
	static struct cli_command_info info[NCOMMANDS];

	for (size_t i = 0; i < NCOMMANDS; i++)
		info[i] = (struct cli_command_info){ commands[i].name, commands[i].fn };
	*n = NCOMMANDS;
	return info;
}

void cli_help(const char *cmd)
{
	if (cmd) {
		for (size_t i = 0; i < NCOMMANDS; i++)
			if (!strcmp(commands[i].name, cmd)) {
				printf("muster %s: %s\n\n%s\n%s", cmd, commands[i].summary,
				       commands[i].usage, COMMON_HELP);
				return;
			}
	}
	printf("usage: muster [--url URL] [--token TOKEN] [--cacert FILE] [--json] COMMAND [ARGS...]\n\n"
	       "Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		printf("  %-10s %s\n", commands[i].name, commands[i].summary);
	printf("\n%s"
	       "'muster COMMAND --help' shows a command's options. Exit codes: 0 ok, 1 error,\n"
	       "2 usage, 3 not found, 4 authentication/permission, 5 server unavailable.\n",
	       COMMON_HELP);
}

/* A script must not take a truncated listing (full disk, closed pipe) for success. */
static int finish(int rc)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "muster: error: cannot write the output: %s\n", strerror(errno));
		return rc ? rc : CLI_EXIT_ERROR;
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct cli_global g = { 0 };
	int i = 1;

	/* Global options before the command; each command accepts them too. */
	while (i < argc && argv[i][0] == '-') {
		const char *a = argv[i];
		const char *val = NULL;
		size_t n = strcspn(a, "=");

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			cli_help(NULL);
			return finish(CLI_EXIT_OK);
		}
		if (!strcmp(a, "--version")) {
			printf("muster 0.1.0\n");
			return CLI_EXIT_OK;
		}
		if (!strcmp(a, "--json")) {
			g.json = true;
			i++;
			continue;
		}
		if (n == 8 && !strncmp(a, "--cacert", 8)) {
			/* the CA bundle of an https:// server; cli_http reads MUSTER_CA_FILE */
			val = a[n] == '=' ? a + n + 1 : i + 1 < argc ? argv[++i] : NULL;
			if (!val || !*val) {
				fprintf(stderr, "muster: error: option '--cacert' needs a file (see 'muster --help')\n");
				return CLI_EXIT_USAGE;
			}
			setenv("MUSTER_CA_FILE", val, 1);
			i++;
			continue;
		}
		if ((n == 5 && !strncmp(a, "--url", 5)) || (n == 7 && !strncmp(a, "--token", 7))) {
			if (a[n] == '=') {
				val = a + n + 1;
			} else if (i + 1 < argc) {
				val = argv[++i];
			} else {
				fprintf(stderr, "muster: error: option '%s' needs a value (see 'muster --help')\n",
					a);
				return CLI_EXIT_USAGE;
			}
			if (n == 5)
				g.url = val;
			else
				g.token = val;
			i++;
			continue;
		}
		fprintf(stderr, "muster: error: unknown option '%s' (see 'muster --help')\n", a);
		return CLI_EXIT_USAGE;
	}
	if (i >= argc) {
		cli_help(NULL);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[i], "help")) {
		cli_help(i + 1 < argc ? argv[i + 1] : NULL);
		return finish(CLI_EXIT_OK);
	}
	for (size_t c = 0; c < NCOMMANDS; c++)
		if (!strcmp(commands[c].name, argv[i]))
			return finish(commands[c].fn(&g, argc - i, argv + i));
	fprintf(stderr, "muster: error: unknown command '%s' (see 'muster --help')\n", argv[i]);
	return CLI_EXIT_USAGE;
}
