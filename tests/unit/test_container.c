// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Container ids from the cgroup path forms of docker, containerd, cri-o and podman;
 * the cgroup chosen from /proc/PID/cgroup; --cgroup paths; the symbol cache's cap. */
#include <string.h>

#include "process/container.h"
#include "process/procfilter.h"
#include "tests/unit/unit.h"

#define ID  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define POD "pod1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d"

static void check_id(const char *path, const char *want_id, const char *want_rt)
{
	char id[CONTAINER_ID_LEN + 1] = "";
	const char *rt = NULL;
	bool found = container_id(path, id, sizeof(id), &rt);

	if (!want_id) {
		CHECK(!found, "%s: found id %s", path, id);
		return;
	}
	CHECK(found && !strcmp(id, want_id), "%s: id '%s'", path, found ? id : "(none)");
	CHECK((!want_rt && !rt) || (want_rt && rt && !strcmp(rt, want_rt)), "%s: runtime %s", path,
	      rt ? rt : "(none)");
}

static void test_ids(void)
{
	check_id("/docker/" ID, ID, "docker");
	check_id("/system.slice/docker-" ID ".scope", ID, "docker");
	check_id("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-" POD
		 ".slice/cri-containerd-" ID ".scope",
		 ID, "containerd");
	check_id("/kubepods/burstable/" POD "/" ID, ID, "containerd");
	check_id("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-" POD
		 ".slice/crio-" ID ".scope",
		 ID, "cri-o");
	check_id("/machine.slice/libpod-" ID ".scope/container", ID, "podman");
	check_id("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope", ID,
		 "podman");
	check_id("/libpod_parent/libpod-" ID, ID, "podman");
	/* not ids: too short, upper case, conmon's own scope, ordinary services */
	check_id("/docker/0123456789ab", NULL, NULL);
	check_id("/docker/0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", NULL,
		 NULL);
	check_id("/machine.slice/libpod-conmon-" ID ".scope", NULL, NULL);
	check_id("/system.slice/ssh.service", NULL, NULL);
	check_id("/", NULL, NULL);
	check_id("", NULL, NULL);
}

static void test_parse(void)
{
	struct proc_place pl;

	/* hybrid: v2 path wins; the id may be on a v1 line only */
	cgroup_parse("12:memory:/docker/" ID "\n1:name=systemd:/docker/" ID "\n0::/\n", &pl);
	CHECK(!strcmp(pl.cgroup, "/"), "cgroup %s", pl.cgroup);
	CHECK(!strcmp(pl.id, ID) && pl.runtime && !strcmp(pl.runtime, "docker"), "id %s", pl.id);
	cgroup_parse("0::/asyncbpf-test-1\n", &pl);
	CHECK(!strcmp(pl.cgroup, "/asyncbpf-test-1") && !pl.id[0], "cgroup %s id %s", pl.cgroup,
	      pl.id);
	/* v1 only: name=systemd's path, else the first */
	cgroup_parse("4:memory:/a\n1:name=systemd:/system.slice/x.service\n", &pl);
	CHECK(!strcmp(pl.cgroup, "/system.slice/x.service"), "cgroup %s", pl.cgroup);
	cgroup_parse("4:memory:/a\n3:cpu:/b", &pl);
	CHECK(!strcmp(pl.cgroup, "/a"), "cgroup %s", pl.cgroup);
	cgroup_parse("garbage", &pl);
	CHECK(!pl.cgroup[0] && !pl.id[0], "cgroup %s", pl.cgroup);
}

static void test_cgroup_paths(void)
{
	char out[CGROUP_PATH_LEN];

	cgroup_normalize("/sys/fs/cgroup/unified/a/b/", out, sizeof(out));
	CHECK(!strcmp(out, "/a/b"), "%s", out);
	cgroup_normalize("/sys/fs/cgroup/system.slice", out, sizeof(out));
	CHECK(!strcmp(out, "/system.slice"), "%s", out);
	cgroup_normalize("a", out, sizeof(out));
	CHECK(!strcmp(out, "/a"), "%s", out);
	cgroup_normalize("/sys/fs/cgroupx", out, sizeof(out));
	CHECK(!strcmp(out, "/sys/fs/cgroupx"), "%s", out);
	CHECK(cgroup_under("/a/b", "/a"), "below");
	CHECK(cgroup_under("/a", "/a"), "same");
	CHECK(!cgroup_under("/ab", "/a"), "prefix of a name is not a parent");
	CHECK(cgroup_under("/x", "/"), "root holds all");
}

static void test_filters(void)
{
	struct procfilter f = { 0 };
	struct proc_place pl = { 0 };
	char why[256];

	strcpy(pl.id, ID);
	strcpy(pl.label, "0123456789ab");
	strcpy(pl.cgroup, "/system.slice/docker-" ID ".scope");
	CHECK(procfilter_match(&f, "python3", &pl), "no filter takes all");
	CHECK(!procfilter_add(&f, FILTER_CONTAINER, "0123", why, sizeof(why)), "%s", why);
	CHECK(procfilter_match(&f, "python3", &pl), "id prefix");
	CHECK(!procfilter_add(&f, FILTER_COMM, "python3.12", why, sizeof(why)), "%s", why);
	CHECK(!procfilter_match(&f, "python3", &pl), "comm must match too");
	CHECK(!procfilter_add(&f, FILTER_COMM, "python3", why, sizeof(why)), "%s", why);
	CHECK(procfilter_match(&f, "python3", &pl), "one of two comms");
	CHECK(!procfilter_add(&f, FILTER_CGROUP, "/sys/fs/cgroup/system.slice", why, sizeof(why)),
	      "%s", why);
	CHECK(procfilter_match(&f, "python3", &pl), "cgroup parent");
	CHECK(procfilter_add(&f, FILTER_COMM, "", why, sizeof(why)), "empty value refused");
	pl.id[0] = 'f';
	CHECK(!procfilter_match(&f, "python3", &pl), "other container");
	procfilter_free(&f);
}

int main(void)
{
	test_ids();
	test_parse();
	test_cgroup_paths();
	test_filters();
	return unit_exit();
}
