"""The learner's data as a whole: export and import, and the learners in a data folder."""
