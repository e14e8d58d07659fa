"""placeholder"""
class TokenizerInfo:
    pass
