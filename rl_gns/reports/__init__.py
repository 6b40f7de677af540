"""Reports: commands that only read run directories and write figures and tables. They never import experiments."""
