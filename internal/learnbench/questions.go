package learnbench

// terms are things the shared test models read about in training (the
// Linux kernel's documentation, Python's, fortune files); Questions asks
// about each once.
var terms = []string{
	"a file descriptor", "the kill command", "a kernel module", "the page cache", "a spinlock", "a mutex",
	"an interrupt handler", "the scheduler", "a system call", "a device driver", "the virtual file system",
	"a block device", "a character device", "the init process", "a zombie process", "a signal handler",
	"the proc file system", "sysfs", "a memory barrier", "a semaphore", "the slab allocator", "a page fault",
	"a kernel thread", "a workqueue", "a tasklet", "the boot loader", "a device tree", "the root file system",
	"a symbolic link", "a hard link", "an inode", "a mount point", "a network namespace", "a cgroup",
	"the OOM killer", "swap space", "a core dump", "the ls command", "the grep command", "a shell script",
	"an environment variable", "a pipe", "a socket", "a daemon", "a cron job", "the sudo command",
	"a Python list", "a Python dictionary", "a tuple", "a generator", "a decorator", "a lambda function",
	"a list comprehension", "the global interpreter lock", "a Python module", "a Python package",
	"a virtual environment", "an iterator", "an exception", "the with statement", "a context manager",
	"a class method", "a static method", "the self parameter", "a docstring", "the import system",
	"a coroutine", "the asyncio module", "a thread", "the subprocess module", "the os module",
	"a regular expression", "string formatting", "a bytes object", "a set", "a frozen set", "slicing",
	"the range function", "the zip function", "the map function", "a keyword argument", "a default argument",
	"the unittest module", "a traceback", "the logging module", "a named tuple", "a data class",
	"type hints", "the pickle module", "a JSON file", "the pathlib module", "a file object",
	"garbage collection", "reference counting", "a weak reference", "the sys module", "a byte order mark",
	"Unicode", "UTF-8", "a fortune cookie", "a proverb", "the meaning of life", "a good programmer",
	"a computer", "a bug", "a patch", "a mailing list", "a maintainer", "version control", "a release candidate",
	"backward compatibility", "a license", "free software", "an operating system", "a compiler", "a linker",
}

// Questions returns the bench's questions: "What is T?" for every term.
func Questions() []string {
	out := make([]string, len(terms))
	for i, t := range terms {
		out[i] = "What is " + t + "?"
	}
	return out
}
