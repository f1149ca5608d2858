"""The course as files: lesson sources and notebooks, the student build, the nbgrader course, the website."""
