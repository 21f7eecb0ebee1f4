"""The fork set (verified set v3): LoCoEval-format tasks whose truth a model cannot know without the conversation.

(Full description below; this package is under construction.)
"""
